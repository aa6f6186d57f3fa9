//! Deterministic generator of realistic sample sessions (ADK session JSON).
