//! Charts (plotters), SVG and PNG.
