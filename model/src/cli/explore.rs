//! `ckpt-model explore`: stateright's Explorer over the model, with ckpt's
//! views of steps, states and paths.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ckpt_model::render::explorer::View;
use ckpt_model::render::flags::flags;
use ckpt_model::search::system::SysModel;
use ckpt_model::zoo::validate;
use stateright::Model;

use crate::cli::args::ExploreArgs;
use crate::cli::exit::usage_error;
use crate::cli::exit::ExitStatus;

/// Runs `explore` until the process is stopped.
pub fn run(args: &ExploreArgs) -> ExitStatus {
    let cfg = args.model.config(args.semantics);
    if let Err(e) = validate(&cfg) {
        return usage_error(&e);
    }
    let port = args.port;
    // stateright's Explorer unwraps its bind result, so a taken port would
    // panic after we announced the address: bind first, report errors, and
    // hand over the address actually bound (port 0 picks a free one).
    let addr = match std::net::TcpListener::bind(("127.0.0.1", port)).and_then(|l| l.local_addr()) {
        Ok(a) => a,
        Err(e) => return usage_error(&format!("cannot serve on 127.0.0.1:{port}: {e}")),
    };
    println!("ckpt-model explore {}", flags(&cfg));
    let threads = usize::from(args.model.threads);
    let server = std::thread::spawn(move || {
        let model = SysModel::new(cfg).with_presenter(Arc::new(View));
        let _ = model.checker().threads(threads).serve(addr);
    });
    // Announce the address only once the Explorer answers on it (the
    // server binds in its own thread; between our probe above and its bind
    // another process could take the port, and then it panics).
    let started = Instant::now();
    while !server.is_finished() && started.elapsed() < Duration::from_secs(30) {
        if std::net::TcpStream::connect(addr).is_ok() {
            println!("serving on http://{addr}/ (Ctrl-C to stop)");
            let _ = std::io::stdout().flush();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    match server.join() {
        Ok(()) => ExitStatus::Ok,
        Err(_) => usage_error(&format!(
            "cannot serve on {addr}: the Explorer failed to start"
        )),
    }
}
