//! `ckpt-model explore`: stateright's Explorer over the model, with ckpt's
//! views of steps, states and paths, behind ckpt's own page.
//!
//! stateright serves its Explorer (its page and its JSON API: `/.status`,
//! `/.states/...`, `/.runtocompletion`) on a loopback port of its own;
//! this command serves, on the port asked for, ckpt's page
//! (`model/explorer/`: what to click, plain-text marks that need no emoji
//! font, a loading line while an address's path is fetched, the violation
//! of a step in red) and passes every other request to stateright's server.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ckpt_model::render::explorer::View;
use ckpt_model::render::flags::flags;
use ckpt_model::search::system::SysModel;
use ckpt_model::zoo::validate;
use stateright::Model;

use crate::cli::args::ExploreArgs;
use crate::cli::exit::{usage_error, ExitStatus};

/// ckpt's page: stateright's, changed (the notice is in the file).
const INDEX: &str = include_str!("../../explorer/index.htm");
/// ckpt's script: stateright's, changed.
const APP_JS: &str = include_str!("../../explorer/app.js");

/// Waits until something answers on `addr` (at most 30 s, or until
/// `alive` says the server is gone).
fn answers(addr: SocketAddr, alive: impl Fn() -> bool) -> bool {
    let started = Instant::now();
    while alive() && started.elapsed() < Duration::from_secs(30) {
        if TcpStream::connect(addr).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Runs `explore` until the process is stopped.
pub fn run(args: &ExploreArgs) -> ExitStatus {
    let cfg = args.model.config(args.semantics);
    if let Err(e) = validate(&cfg) {
        return usage_error(&e);
    }
    let port = args.port;
    let front = match tiny_http::Server::http(("127.0.0.1", port)) {
        Ok(s) => s,
        Err(e) => return usage_error(&format!("cannot serve on 127.0.0.1:{port}: {e}")),
    };
    let Some(addr) = front.server_addr().to_ip() else {
        return usage_error(&format!(
            "cannot serve on 127.0.0.1:{port}: not an IP address"
        ));
    };
    // stateright's server, on a free loopback port of its own (it unwraps
    // its bind: the port is probed first, and its start awaited).
    let inner = match TcpListener::bind(("127.0.0.1", 0)).and_then(|l| l.local_addr()) {
        Ok(a) => a,
        Err(e) => return usage_error(&format!("no loopback port for the Explorer: {e}")),
    };
    let banner = flags(&cfg);
    outln!("ckpt-model explore {banner}");
    let threads = usize::from(args.model.threads);
    let server = std::thread::spawn(move || {
        let model = SysModel::new(cfg).with_presenter(Arc::new(View));
        let _ = model.checker().threads(threads).serve(inner);
    });
    if !answers(inner, || !server.is_finished()) {
        return usage_error(&format!(
            "cannot serve on {inner}: the Explorer failed to start"
        ));
    }
    outln!("serving on http://{addr}/ (Ctrl-C to stop)");
    let _ = std::io::stdout().flush();
    let index = INDEX.replace("CKPT_FLAGS", &banner);
    for rq in front.incoming_requests() {
        let response = match (rq.method(), rq.url()) {
            (tiny_http::Method::Get, "/" | "/index.htm") => page(&index, "text/html"),
            (tiny_http::Method::Get, "/app.js") => page(APP_JS, "application/javascript"),
            (method, url) => forward(inner, method, url),
        };
        let _ = rq.respond(response);
    }
    ExitStatus::Ok
}

fn page(text: &str, content_type: &str) -> tiny_http::ResponseBox {
    let mut r = tiny_http::Response::from_string(text).boxed();
    if let Ok(h) = tiny_http::Header::from_bytes("Content-Type", content_type) {
        r.add_header(h);
    }
    r
}

/// Passes a request to stateright's server and its answer back.
fn forward(inner: SocketAddr, method: &tiny_http::Method, url: &str) -> tiny_http::ResponseBox {
    let fail = |e: &dyn std::fmt::Display| {
        tiny_http::Response::from_string(format!("the Explorer's server did not answer: {e}"))
            .with_status_code(502)
            .boxed()
    };
    let mut s = match TcpStream::connect(inner) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    // HTTP/1.0: the server closes the connection after its answer.
    let request = format!("{method} {url} HTTP/1.0\r\nHost: {inner}\r\nContent-Length: 0\r\n\r\n");
    let mut raw = Vec::new();
    if let Err(e) = s
        .write_all(request.as_bytes())
        .and_then(|()| s.read_to_end(&mut raw))
    {
        return fail(&e);
    }
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return fail(&"no header in its answer");
    };
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let body = raw[split + 4..].to_vec();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(502);
    let mut r = tiny_http::Response::from_data(body)
        .with_status_code(status)
        .boxed();
    for line in head.lines().skip(1) {
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-type") {
                if let Ok(h) = tiny_http::Header::from_bytes(k.trim(), v.trim()) {
                    r.add_header(h);
                }
            }
        }
    }
    r
}
