//! deploy/ and the Dockerfile: the Kubernetes Indexed Job and the Slurm array script are run,
//! for every shard index, with `compaction-sim` replaced by a shim that records its arguments
//! and runs the real binary with `--show-grid` appended. The argument parser therefore sees
//! exactly what a pod or an array task would run, after the shell's own expansions, and the
//! recipes cannot drift from the CLI.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{read_text, root};
use compaction_sim::sweep::grid::DEFAULT_GRID_TOML;

/// A working folder standing in for the shared volume (grid.toml in it), and a `bin/` folder
/// holding the shim, to put first on PATH.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("grid.toml"), DEFAULT_GRID_TOML).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let shim = bin.join("compaction-sim");
        std::fs::write(
            &shim,
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$SHIM_ARGV\"\nexec \"$SHIM_REAL\" \"$@\" --show-grid\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
        Sandbox { dir }
    }

    fn data(&self) -> &Path {
        self.dir.path()
    }

    /// Run `argv` (the recipe's own command) in the data folder with `env`, and return the
    /// arguments compaction-sim received. The run must succeed and print the resolved grid.
    fn run(&self, argv: &[String], env: &[(&str, String)]) -> Vec<String> {
        let argv_file = self.data().join("argv.txt");
        let _ = std::fs::remove_file(&argv_file);
        let path = format!(
            "{}:{}",
            self.data().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir(self.data())
            .env("PATH", path)
            .env("SHIM_ARGV", &argv_file)
            .env("SHIM_REAL", env!("CARGO_BIN_EXE_compaction-sim"))
            .env_remove("COMPACTION_SIM_CACHE")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap_or_else(|e| panic!("cannot run {argv:?}: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{argv:?} with {env:?}: exit {:?}\n{stderr}",
            out.status.code()
        );
        assert!(
            stdout.contains(
                "# 106 settings (104 compaction + 1 no-compaction baseline + 1 as recorded)"
            ),
            "{argv:?} with {env:?} did not print the grid: {stdout}{stderr}"
        );
        read_text(&argv_file).lines().map(str::to_string).collect()
    }
}

/// The value after `flag` in `args`, which must be there exactly once.
fn flag<'a>(args: &'a [String], flag: &str) -> &'a str {
    let at: Vec<usize> = (0..args.len()).filter(|&i| args[i] == flag).collect();
    assert_eq!(at.len(), 1, "{flag} once in {args:?}");
    args.get(at[0] + 1)
        .unwrap_or_else(|| panic!("{flag} without a value in {args:?}"))
}

/// Every shard 1..=n once with n the recipe's count, each --out in its own folder, all matched
/// by the recipe's merge command.
fn check_shards(runs: &[Vec<String>], n: usize, merge_glob: &str, data: &Path) {
    assert_eq!(runs.len(), n);
    let mut shards = BTreeSet::new();
    let mut parents = BTreeSet::new();
    let pattern = glob::Pattern::new(merge_glob).unwrap();
    for args in runs {
        assert_eq!(&args[..2], ["sweep", "transcripts"], "{args:?}");
        assert!(args.contains(&"--quiet".to_string()), "{args:?}");
        assert_eq!(flag(args, "--grid"), "grid.toml");
        let (k, of) = flag(args, "--shard").split_once('/').unwrap();
        assert_eq!(of.parse::<usize>().unwrap(), n, "{args:?}");
        shards.insert(k.parse::<usize>().unwrap());
        let out = flag(args, "--out");
        assert!(pattern.matches(out), "`{merge_glob}` misses {out}");
        // A shard's --out folder has a parent of its own (see the recipes' comments).
        let parent = data.join(out).parent().map(PathBuf::from).unwrap();
        assert!(
            parents.insert(parent),
            "two shards share the folder of {out}"
        );
    }
    assert_eq!(shards, (1..=n).collect::<BTreeSet<_>>());
}

/// The value of `key:` on its one line in `yaml` (comments aside).
fn yaml_value<'a>(yaml: &'a str, key: &str) -> &'a str {
    let hits: Vec<&str> = yaml
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.trim_start().trim_start_matches("- ").strip_prefix(key))
        .filter_map(|rest| rest.strip_prefix(':'))
        .map(str::trim)
        .collect();
    assert_eq!(hits.len(), 1, "`{key}:` once in the Job");
    hits[0]
}

/// The items of the block sequence under `key:`, each a plain or folded (`>`, `>-`) scalar
/// that may continue on more indented lines, folded into one line as YAML does.
fn yaml_block_items(yaml: &str, key: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let start = lines
        .iter()
        .position(|l| l.trim() == format!("{key}:"))
        .unwrap_or_else(|| panic!("`{key}:` with a block sequence in the Job"));
    let key_indent = indent(lines[start]);
    let mut items: Vec<Vec<String>> = Vec::new();
    let mut item_indent = None;
    for l in &lines[start + 1..] {
        if l.trim().is_empty() {
            continue;
        }
        let i = indent(l);
        if l.trim_start().starts_with("- ") && i >= key_indent && item_indent.is_none_or(|d| d == i)
        {
            item_indent = Some(i);
            items.push(vec![l.trim_start()[2..].trim().to_string()]);
        } else if item_indent.is_some_and(|d| i > d) {
            items.last_mut().unwrap().push(l.trim().to_string());
        } else {
            break;
        }
    }
    items
        .into_iter()
        .map(|parts| {
            let parts: Vec<String> = match parts[0].as_str() {
                ">" | ">-" => parts[1..].to_vec(),
                _ => parts,
            };
            parts.join(" ")
        })
        .collect()
}

#[test]
fn the_kubernetes_indexed_job_runs_through_the_argument_parser() {
    let yaml = read_text(&root().join("deploy/k8s-indexed-job.yaml"));
    assert_eq!(yaml_value(&yaml, "kind"), "Job");
    assert_eq!(yaml_value(&yaml, "completionMode"), "Indexed");
    assert_eq!(yaml_value(&yaml, "workingDir"), "/data");
    assert_eq!(yaml_value(&yaml, "mountPath"), "/data");
    let completions: usize = yaml_value(&yaml, "completions").parse().unwrap();
    let parallelism: usize = yaml_value(&yaml, "parallelism").parse().unwrap();
    assert!(completions > 1 && (1..=completions).contains(&parallelism));
    // The container's argv: `command` (a flow sequence, JSON-compatible) then `args`.
    let mut argv: Vec<String> = serde_json::from_str(yaml_value(&yaml, "command"))
        .expect("command is a flow sequence of quoted strings");
    argv.extend(yaml_block_items(&yaml, "args"));
    assert_eq!(argv.len(), 3, "{argv:?}");
    let merge = yaml
        .lines()
        .find_map(|l| l.split_once("compaction-sim merge "))
        .map(|(_, glob)| glob.trim().to_string())
        .expect("the Job's comment says how to merge");
    let sandbox = Sandbox::new();
    let runs: Vec<Vec<String>> = (0..completions)
        .map(|i| sandbox.run(&argv, &[("JOB_COMPLETION_INDEX", i.to_string())]))
        .collect();
    check_shards(&runs, completions, &merge, sandbox.data());
}

#[test]
fn the_slurm_array_script_runs_through_the_argument_parser() {
    let path = root().join("deploy/slurm-array.sh");
    let script = read_text(&path);
    let directive = |name: &str| {
        script
            .lines()
            .find_map(|l| l.strip_prefix(&format!("#SBATCH --{name}=")))
            .unwrap_or_else(|| panic!("#SBATCH --{name}= in the script"))
            .trim()
            .to_string()
    };
    let array = directive("array");
    let (a, b) = array.split_once('-').expect("--array=A-B");
    let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
    assert_eq!(directive("chdir"), "/data");
    let cpus = directive("cpus-per-task");
    let merge = script
        .lines()
        .find_map(|l| l.split_once("compaction-sim merge "))
        .map(|(_, glob)| glob.trim().trim_end_matches('\'').to_string())
        .expect("the script's comment says how to merge");
    let sandbox = Sandbox::new();
    let argv = vec!["bash".to_string(), path.display().to_string()];
    let count = b - a + 1;
    let runs: Vec<Vec<String>> = (a..=b)
        .map(|task| {
            sandbox.run(
                &argv,
                &[
                    ("SLURM_ARRAY_TASK_ID", task.to_string()),
                    ("SLURM_ARRAY_TASK_COUNT", count.to_string()),
                    ("SLURM_CPUS_PER_TASK", cpus.clone()),
                ],
            )
        })
        .collect();
    check_shards(&runs, count, &merge, sandbox.data());
}

/// The image the recipes name is the Dockerfile's: a builder stage, then a runtime stage with
/// the binary on PATH and the `sh` the Job runs it through (so not `scratch` or distroless).
#[test]
fn the_dockerfile_builds_a_small_runtime_image_with_the_binary() {
    let docker = read_text(&root().join("Dockerfile"));
    let froms: Vec<&str> = docker
        .lines()
        .filter_map(|l| l.strip_prefix("FROM "))
        .collect();
    assert_eq!(froms.len(), 2, "two stages: {froms:?}");
    assert!(
        froms[0].starts_with("rust:") && froms[0].ends_with(" AS builder"),
        "{froms:?}"
    );
    assert!(
        !froms[1].contains("scratch") && !froms[1].contains("distroless"),
        "the Job runs `sh -c`: {froms:?}"
    );
    assert!(docker.contains("cargo build --release --locked --bin compaction-sim"));
    assert!(docker.contains(
        "COPY --from=builder /src/target/release/compaction-sim /usr/local/bin/compaction-sim"
    ));
    // the unprivileged user has no home: the token cache needs a writable place, not /data
    let runtime = docker.split("FROM ").nth(2).unwrap_or("");
    let cache = runtime
        .lines()
        .find_map(|l| l.strip_prefix("ENV COMPACTION_SIM_CACHE="));
    assert!(
        cache.is_some_and(|c| c.starts_with("/tmp/")),
        "runtime stage sets COMPACTION_SIM_CACHE under /tmp: {cache:?}"
    );
    let ignore = read_text(&root().join(".dockerignore"));
    assert!(
        ignore.lines().any(|l| l == "*"),
        "the build context is only what it needs"
    );
    let yaml = read_text(&root().join("deploy/k8s-indexed-job.yaml"));
    assert!(yaml.contains("top-level Dockerfile"));
}
