//! Connections that never finish: stalled request heads, idle kept-alive connections,
//! stalled request bodies, and the connection cap. Raw sockets play the slow or silent client;
//! the timeouts are configured short so the tests stay fast.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{ADMIN_TOKEN, Backend, Options, TestApp, images};
use confetti::app::{self, AppState};
use confetti::config::{ServeArgs, SiteArgs};
use confetti::settings::Settings;
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

both_backends!(a_stalled_upload_body_is_cut_after_the_body_idle_timeout_and_nothing_is_stored);

/// The first bytes of a request whose head never ends.
const HALF_A_HEAD: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: confetti\r\nX-Never-Ends: ";

/// A client that opens a new connection for every request.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder().pool_max_idle_per_host(0).timeout(Duration::from_secs(10)).build().expect("client")
}

/// Posts JSON to a server started outside the harness and reads the JSON answer.
async fn post_json(client: &reqwest::Client, url: &str, body: serde_json::Value) -> serde_json::Value {
    send_json(client.post(url).json(&body)).await
}

async fn send_json(request: reqwest::RequestBuilder) -> serde_json::Value {
    request.send().await.expect("an answer").json().await.expect("a JSON answer")
}

/// An event on a server started outside the harness, as the admin creates it.
async fn create_event(client: &reqwest::Client, base: &str) -> serde_json::Value {
    let body = json!({"name": "Anna & Ben", "organiser_password": "correct horse"});
    send_json(client.post(format!("{base}/api/v1/events")).bearer_auth(ADMIN_TOKEN).json(&body)).await
}

async fn stalled_connection(addr: SocketAddr) -> TcpStream {
    let mut stream = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(addr))
        .await
        .expect("the server stopped taking connections")
        .expect("connect");
    stream.write_all(HALF_A_HEAD).await.expect("send half a head");
    stream
}

/// How long until the server closes `stream` (reads end or fail), at most `bound`.
async fn time_until_closed(stream: &mut TcpStream, bound: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut sink = [0u8; 4096];
    tokio::time::timeout(bound, async {
        loop {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => return started.elapsed(),
                Ok(_) => {}
            }
        }
    })
    .await
    .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_connection_stalled_inside_its_request_head_is_closed_after_the_header_timeout() {
    let app = TestApp::spawn_with(Backend::Sqlite, Options { header_timeout_s: 2, ..Options::default() }).await;
    let mut stream = stalled_connection(app.addr).await;
    let lived = time_until_closed(&mut stream, Duration::from_secs(10)).await;
    let lived = lived.expect("the stalled connection was still open after 10 s");
    println!("a connection stalled inside its head lived {lived:?} (header timeout 2 s)");
    assert!(lived >= Duration::from_millis(1500) && lived <= Duration::from_secs(5), "closed after {lived:?}");
    // Others are served as before.
    assert_eq!(fresh_client().get(app.url("/healthz")).send().await.expect("healthz").status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_head_sent_one_byte_at_a_time_is_closed_after_the_header_timeout_all_the_same() {
    let app = TestApp::spawn_with(Backend::Sqlite, Options { header_timeout_s: 2, ..Options::default() }).await;
    let mut stream = stalled_connection(app.addr).await;
    let started = Instant::now();
    // Each byte is progress, but the head never ends: the clock runs from its first byte.
    let lived = loop {
        if stream.write_all(b"x").await.is_err() || started.elapsed() > Duration::from_secs(10) {
            break started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(lived >= Duration::from_millis(1500) && lived <= Duration::from_secs(5), "closed after {lived:?}");
}

#[test]
fn the_timeouts_default_to_thirty_seconds_for_a_head_sixty_for_a_silent_body_and_seventy_five_idle() {
    let site = SiteArgs { data_dir: "unused".into(), database_url: None, public_url: None };
    let args = ServeArgs::defaults(site).expect("defaults");
    assert_eq!((args.header_timeout_s, args.body_idle_timeout_s, args.idle_timeout_s), (30, 60, 75));
    assert_eq!(args.max_connections, None, "derived from the open-files limit by default");
    let settings = Settings::new("unused", "http://127.0.0.1:8080");
    let timeouts = [settings.header_timeout, settings.body_idle_timeout, settings.idle_timeout];
    assert_eq!(timeouts.map(|t| t.as_secs()), [30, 60, 75], "the runtime settings' defaults are the flags'");
    assert_eq!(settings.max_connections, None);
}

/// A server with settings `Options` does not carry (the idle timeout), on SQLite.
struct Server {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    _data_dir: tempfile::TempDir,
}

async fn serve_with(edit: impl FnOnce(&mut Settings)) -> Server {
    let data_dir = tempfile::tempdir().expect("temp dir");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut settings = Settings { min_free_bytes: 0, ..Settings::new(data_dir.path(), &format!("http://{addr}")) };
    edit(&mut settings);
    let state = AppState::open(settings, ADMIN_TOKEN.to_owned()).await.expect("open app state");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app::serve(listener, state, async {
        let _ = stopped.await;
    }));
    Server { addr, stop, _data_dir: data_dir }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_kept_alive_connection_is_closed_after_the_idle_timeout_while_a_live_stream_stays_open() {
    let server = serve_with(|settings| {
        settings.header_timeout = Duration::from_secs(1);
        settings.idle_timeout = Duration::from_secs(3);
    })
    .await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: confetti\r\n\r\n").await.expect("request");
    let mut response = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut response))
        .await
        .expect("an answer")
        .expect("read");
    assert!(response[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&response[..n]));
    // Idle, not inside a head: the idle timeout applies, not the shorter header timeout.
    let lived = time_until_closed(&mut stream, Duration::from_secs(10)).await;
    let lived = lived.expect("the idle connection was still open after 10 s");
    assert!(lived >= Duration::from_millis(2500) && lived <= Duration::from_secs(6), "closed after {lived:?}");

    // A request in flight has no idle deadline: a slideshow's stream outlives both timeouts.
    let client = fresh_client();
    let base = format!("http://{}", server.addr);
    let event = create_event(&client, &base).await;
    let slug = event["slug"].as_str().expect("slug");
    let login = post_json(
        &client,
        &format!("{base}/api/v1/events/{slug}/organiser-sessions"),
        json!({"password": "correct horse"}),
    )
    .await;
    let token = login["token"].as_str().expect("token");
    let mut live = TcpStream::connect(server.addr).await.expect("connect");
    let request =
        format!("GET /api/v1/events/{slug}/live HTTP/1.1\r\nHost: confetti\r\nAuthorization: Bearer {token}\r\n\r\n");
    live.write_all(request.as_bytes()).await.expect("live request");
    let n = tokio::time::timeout(Duration::from_secs(5), live.read(&mut response))
        .await
        .expect("a live answer")
        .expect("read");
    assert!(response[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&response[..n]));
    assert_eq!(time_until_closed(&mut live, Duration::from_secs(5)).await, None, "the live stream was cut");
    let _ = server.stop.send(());
}

async fn a_stalled_upload_body_is_cut_after_the_body_idle_timeout_and_nothing_is_stored(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options { body_idle_timeout_s: 2, ..Options::default() }).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Slow Sam").await;
    let photo = images::jpeg_of_about(200_000);
    let boundary = "confetti-stall";
    let before = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"photo.jpg\"\r\n\
         Content-Type: image/jpeg\r\n\r\n"
    );
    let after = format!("\r\n--{boundary}--\r\n");
    let head = format!(
        "POST /api/v1/events/{}/uploads HTTP/1.1\r\nHost: confetti\r\nAuthorization: Bearer {}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\n\r\n",
        guest.slug,
        guest.token,
        before.len() + photo.len() + after.len()
    );
    let mut stream = TcpStream::connect(app.addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(before.as_bytes()).await.expect("part head");
    // Half the photo, then silence.
    stream.write_all(&photo[..photo.len() / 2]).await.expect("half the photo");
    let started = Instant::now();

    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    let waited = started.elapsed();
    assert!(read.is_ok(), "the stalled upload was still open after 10 s");
    assert!(waited >= Duration::from_millis(1500) && waited <= Duration::from_secs(6), "cut after {waited:?}");
    let answer = String::from_utf8_lossy(&answer);
    println!("a stalled upload was cut after {waited:?}: {}", answer.lines().next().unwrap_or("(closed)"));
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 4"), "a refusal or a closed connection: {answer}");
    app.assert_nothing_stored(&guest).await;

    // The guest can upload the photo afterwards, in full.
    let response = app.upload(&guest, &photo, None).await;
    assert_eq!(response.status(), StatusCode::CREATED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_the_connection_cap_a_new_request_waits_for_a_stalled_connection_to_time_out_and_is_answered() {
    let options = Options { header_timeout_s: 2, max_connections: Some(20), ..Options::default() };
    let app = TestApp::spawn_with(Backend::Sqlite, options).await;
    let mut stalled = Vec::new();
    for _ in 0..20 {
        stalled.push(stalled_connection(app.addr).await);
    }
    let client = fresh_client();
    let started = Instant::now();
    let response = client.get(app.url("/healthz")).send().await.expect("healthz at the cap");
    let waited = started.elapsed();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        waited >= Duration::from_millis(1000) && waited <= Duration::from_secs(6),
        "answered after {waited:?}: the 21st connection waits until a stalled one is closed"
    );
    for stream in &mut stalled {
        assert!(time_until_closed(stream, Duration::from_secs(5)).await.is_some(), "a stalled connection stayed open");
    }
    // The server keeps accepting: many new connections, one after another.
    for _ in 0..50 {
        assert_eq!(client.get(app.url("/healthz")).send().await.expect("healthz").status(), StatusCode::OK);
    }
}

/// The `confetti` binary as an operator runs it, with this open-files soft limit.
struct Binary {
    addr: SocketAddr,
    _child: tokio::process::Child,
    _data_dir: tempfile::TempDir,
}

async fn start_binary(soft_open_files: u64) -> Binary {
    let data_dir = tempfile::tempdir().expect("temp dir");
    let addr = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_confetti"));
    command
        .args(["serve", "--no-demo", "--bind", &addr.to_string(), "--min-free-bytes", "0"])
        .arg("--data-dir")
        .arg(data_dir.path())
        .env("CONFETTI_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("RUST_LOG", "warn")
        .env_remove("DATABASE_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    // SAFETY: only setrlimit, which is async-signal-safe, runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            limit.rlim_cur = soft_open_files.min(limit.rlim_max);
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().expect("start confetti");
    let client = fresh_client();
    let started = Instant::now();
    loop {
        if let Ok(response) = client.get(format!("http://{addr}/healthz")).send().await
            && response.status() == StatusCode::OK
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "confetti did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Binary { addr, _child: child, _data_dir: data_dir }
}

/// 400 connections that sent half a head and stall, against the binary started with a soft
/// open-files limit of 256 (a common default): it raises the limit to the hard one and caps
/// connections below it, so it neither runs out of descriptors nor keeps others waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_is_answered_in_under_two_seconds_beside_400_connections_stalled_in_their_heads() {
    // This process holds the 400 client ends; the binary raises its own limit to the same
    // hard limit, which must leave room for 400 connections under the three-quarter cap.
    let open_files = confetti::http::connections::raise_open_files_limit().unwrap_or(0);
    assert!(open_files >= 1024, "this test needs a hard open-files limit of at least 1024, not {open_files}");
    let server = start_binary(256).await;
    let base = format!("http://{}", server.addr);
    let client = fresh_client();
    let event = create_event(&client, &base).await;
    let slug = event["slug"].as_str().expect("slug").to_owned();
    let join_token = event["join_token"].as_str().expect("join token");
    let joined = post_json(
        &client,
        &format!("{base}/api/v1/events/{slug}/guests"),
        json!({"join_token": join_token, "display_name": "Patient Pat"}),
    )
    .await;
    let token = joined["token"].as_str().expect("guest token").to_owned();

    let mut stalled = Vec::new();
    for _ in 0..400 {
        stalled.push(stalled_connection(server.addr).await);
    }
    // Let the server take them all in before the timed requests.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let started = Instant::now();
    let health = client.get(format!("{base}/healthz")).send().await;
    let health_took = started.elapsed();
    assert_eq!(health.expect("healthz beside 400 stalled connections").status(), StatusCode::OK);
    let started = Instant::now();
    let listing = client.get(format!("{base}/api/v1/events/{slug}/uploads")).bearer_auth(&token).send().await;
    let listing_took = started.elapsed();
    assert_eq!(listing.expect("a listing beside 400 stalled connections").status(), StatusCode::OK);
    println!("beside 400 stalled connections: /healthz {health_took:?}, the upload listing {listing_took:?}");
    assert!(health_took < Duration::from_secs(2), "/healthz took {health_took:?}");
    assert!(listing_took < Duration::from_secs(2), "the listing took {listing_took:?}");
    // The stalled connections are still there (their 30 s are not up): nothing was dropped
    // to make room.
    for stream in &mut stalled {
        assert_eq!(time_until_closed(stream, Duration::from_millis(1)).await, None);
    }
}

/// A client that asks for a photo and stops reading holds its connection (and its place
/// under the cap) only until the body idle timeout: the response is cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_stops_reading_a_response_is_cut_after_the_body_idle_timeout() {
    let options = Options { body_idle_timeout_s: 2, derivative_workers: Some(0), ..Options::default() };
    let app = TestApp::spawn_with(Backend::Sqlite, options).await;
    let event = app.create_event().await;
    let guest = app.join(&event, "Greedy Gus").await;
    // Larger than what the kernel buffers on both ends of a loopback connection.
    let photo = images::jpeg_of_about(12_000_000);
    let response = app.upload(&guest, &photo, None).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let upload: serde_json::Value = response.json().await.expect("upload json");
    let id = upload["id"].as_str().expect("id");

    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("small receive buffer");
    let mut stream = socket.connect(app.addr).await.expect("connect");
    let request = format!(
        "GET /api/v1/uploads/{id}/original HTTP/1.1\r\nHost: confetti\r\nAuthorization: Bearer {}\r\n\r\n",
        guest.token
    );
    stream.write_all(request.as_bytes()).await.expect("request");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut received = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the connection was still open 20 s later");
    let head_end = received.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head") + 4;
    let head = String::from_utf8_lossy(&received[..head_end]).to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains(&format!("content-length: {}", photo.len())), "{head}");
    let body = received.len() - head_end;
    assert!(body < photo.len(), "the whole photo arrived ({body} bytes): the stalled response was not cut");
}
