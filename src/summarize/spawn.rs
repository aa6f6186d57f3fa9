//! Starting a summarizer's program (`command:`, the `python:` workers).

/// Start `cmd`, again a few times while the program is "busy" (`ETXTBSY`): a program file
/// just written can still be open for writing in a child another thread is forking, for the
/// instant between its fork and its exec. Any other error is returned at once.
pub(crate) fn spawn_program(
    cmd: &mut std::process::Command,
) -> std::io::Result<std::process::Child> {
    let mut wait = std::time::Duration::from_millis(5);
    for _ in 0..6 {
        match cmd.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(wait);
                wait *= 2;
            }
            other => return other,
        }
    }
    cmd.spawn()
}

#[cfg(all(test, unix))]
mod spawn_tests {
    use super::spawn_program;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;

    /// A program still open for writing is "busy" to exec; once it is closed (here 20 ms
    /// later, on another thread) the start goes through instead of failing the call — the
    /// race a just-written summarizer script can hit while another thread forks.
    #[test]
    fn a_program_busy_for_an_instant_still_starts() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("prog");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o755)
            .open(&p)
            .unwrap();
        f.write_all(b"#!/bin/sh\necho started\n").unwrap();
        f.flush().unwrap();
        // while it is open for writing, exec is refused as busy
        let busy = std::process::Command::new(&p).spawn().unwrap_err();
        assert_eq!(busy.kind(), std::io::ErrorKind::ExecutableFileBusy);
        let closer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(f);
        });
        let out =
            spawn_program(std::process::Command::new(&p).stdout(std::process::Stdio::piped()))
                .unwrap()
                .wait_with_output()
                .unwrap();
        closer.join().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
    }
}
