//! SIGINT and SIGTERM, handled once for the whole process (issue 28).
//!
//! [`install`] (called first thing by `main`) takes both signals over on a thread
//! of its own. A long-running command wraps its serving future in
//! [`until_signalled`]: on the first signal that future is dropped — which
//! withdraws mDNS adverts with a goodbye, removes partial files, closes listeners,
//! as on a clean exit — and the command returns normally. While no command is
//! watching (short commands, or the set-up before serving starts) a signal ends
//! the process at once, as without a handler, after removing a store the command
//! created and left blank; so does a second signal while a first one is being
//! handled.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::watch;

/// The signal received, once one is.
static SIGNALLED: OnceLock<watch::Sender<Option<&'static str>>> = OnceLock::new();
/// Futures waiting in [`until_signalled`].
static WATCHING: AtomicUsize = AtomicUsize::new(0);

fn sender() -> &'static watch::Sender<Option<&'static str>> {
    SIGNALLED.get_or_init(|| watch::channel(None).0)
}

/// Takes SIGINT and SIGTERM over (once; later calls do nothing).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let tx = sender();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new().name("tacit-signals".into()).spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                let _ = ready_tx.send(());
                return;
            };
            rt.block_on(async move {
                use tokio::signal::unix::{SignalKind, signal};
                let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
                else {
                    let _ = ready_tx.send(());
                    return;
                };
                let _ = ready_tx.send(());
                loop {
                    let (name, code) = tokio::select! {
                        _ = int.recv() => ("SIGINT", 130),
                        _ = term.recv() => ("SIGTERM", 143),
                    };
                    if WATCHING.load(Ordering::SeqCst) == 0 || tx.borrow().is_some() {
                        super::remove_blank_new_stores();
                        std::process::exit(code);
                    }
                    // Not eprintln!: with stderr gone (a parent that died and closed
                    // our pipe) it panics, the thread ends, and every later SIGTERM is
                    // caught by nobody: the process could then only be killed with -9.
                    {
                        use std::io::Write;
                        let _ = writeln!(std::io::stderr(), "tacit: {name}: stopping (again to stop at once)");
                    }
                    tx.send_replace(Some(name));
                }
            });
        });
        if spawned.is_ok() {
            // the handlers are in place before the command starts
            let _ = ready_rx.recv();
        }
    });
}

/// Runs `fut` until it ends (`Ok(Some(..))` or its error) or SIGINT/SIGTERM
/// arrives: then `fut` is dropped (its adverts withdrawn with a goodbye, partial
/// files removed, listeners closed) and `Ok(None)` comes back.
pub async fn until_signalled<T>(fut: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<Option<T>> {
    struct Watching;
    impl Drop for Watching {
        fn drop(&mut self) {
            WATCHING.fetch_sub(1, Ordering::SeqCst);
        }
    }
    WATCHING.fetch_add(1, Ordering::SeqCst);
    let _w = Watching;
    let mut rx = sender().subscribe();
    tokio::select! {
        r = fut => r.map(Some),
        _ = rx.wait_for(Option::is_some) => Ok(None),
    }
}

/// [`until_signalled`] for a serving command: a signal is a clean end.
pub async fn serving(fut: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    until_signalled(fut).await.map(|_| ())
}
