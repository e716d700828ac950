//! What `serve` and the CLI do before and around serving: the public address, the admin
//! token, the demo event on a fresh install, and printing a
//! join link with its QR code.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use anyhow::Context;
use qrcode::QrCode;
use qrcode::render::unicode::Dense1x2;

use crate::auth;
use crate::blocking::Blocking;
use crate::db::Db;
use crate::db::events::EventRow;
use crate::domain::{EventName, OrganiserPassword};
use crate::events::{NewEvent, create_event, join_url};
use crate::settings::Settings;

/// The configured public URL, or one phones on the same network can reach: this machine's
/// LAN address when bound to all interfaces, else the bound address.
pub fn public_url(configured: Option<&str>, bind: SocketAddr) -> String {
    if let Some(url) = configured.filter(|u| !u.is_empty()) {
        return url.trim_end_matches('/').to_owned();
    }
    let host: IpAddr = if bind.ip().is_unspecified() {
        local_ip_address::local_ip().unwrap_or(IpAddr::from([127, 0, 0, 1]))
    } else {
        bind.ip()
    };
    match host {
        IpAddr::V6(v6) => format!("http://[{v6}]:{}", bind.port()),
        IpAddr::V4(v4) => format!("http://{v4}:{}", bind.port()),
    }
}

/// The admin token: `CONFETTI_ADMIN_TOKEN` if set, else the one stored in the data
/// directory, else a new one, stored with mode 0600 and printed this once.
pub fn admin_token(from_env: Option<String>, data_dir: &Path) -> anyhow::Result<String> {
    if let Some(token) = from_env {
        return Ok(token);
    }
    let path = data_dir.join("admin_token");
    if let Ok(token) = std::fs::read_to_string(&path) {
        return Ok(token.trim().to_owned());
    }
    crate::private_files::private_dir(data_dir)?;
    let token = format!("a_{}", auth::random_string(32)?);
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)
    }
    .with_context(|| format!("creating {}", path.display()))?;
    writeln!(file, "{token}")?;
    println!("Admin token (stored in {}, shown only now): {token}", path.display());
    Ok(token)
}

/// On a database without events, creates one so the first start gives a working gallery.
pub async fn ensure_demo_event(db: &Db, blocking: &Blocking, settings: &Settings) -> anyhow::Result<()> {
    if db.count_events().await? > 0 {
        return Ok(());
    }
    let password = auth::random_string(9)?;
    let event = create_event(
        db,
        blocking,
        NewEvent {
            name: EventName::parse("Demo event")?,
            password: OrganiserPassword::parse(&password)?,
            guest_quota_bytes: settings.guest_quota_bytes,
            storage_cap_bytes: settings.event_storage_cap_bytes,
            name_chosen: false,
        },
    )
    .await?;
    print_event(&settings.public_url, &event, Some(&password));
    Ok(())
}

/// Prints how guests join an event: the link and the same link as a terminal QR code.
pub fn print_event(public_url: &str, event: &EventRow, password: Option<&str>) {
    let url = join_url(public_url, event);
    let mut out = format!("\nEvent “{}” ({})\nGuests join at: {url}\n", event.name, event.slug);
    if let Ok(code) = QrCode::new(url.as_bytes()) {
        out.push_str(&code.render::<Dense1x2>().quiet_zone(true).build());
        out.push('\n');
    }
    out.push_str(&format!("Organiser page: {public_url}/e/{}/organiser\n", event.slug));
    if let Some(password) = password {
        out.push_str(&format!("Organiser password: {password}\n"));
    }
    println!("{out}");
}
