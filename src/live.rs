//! Live news for slideshows: which uploads (and guestbook messages) became visible or went away,
//! on every instance.
//!
//! Changes are appended to the `live_feed` table in their own transaction (`db::live`). One
//! poller per instance reads the feed's recent tail while anyone listens and fans new rows out
//! to this instance's listeners. Reading a window (not "after the last sequence number seen")
//! matters on PostgreSQL: sequence numbers are handed out before commit, so a smaller one can
//! become visible after a larger one. A local change pokes the poller, so this instance's own
//! listeners hear of it at once; other instances' changes arrive within one poll.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use tokio::sync::{Notify, OnceCell, broadcast, watch};
use uuid::Uuid;

use crate::db::Db;
use crate::db::live::LiveKind;
use crate::db::uploads::UploadRow;

const POLL: Duration = Duration::from_millis(500);
/// How far back each poll reads: longer than any write transaction takes and than the clocks
/// of two instances differ.
const WINDOW: Duration = Duration::from_secs(30);
/// Feed rows are kept this long (longer than the window; nobody reads older ones).
pub const RETENTION: Duration = Duration::from_secs(60 * 60);

#[derive(Clone, Debug)]
pub struct LiveEvent {
    pub event_id: Uuid,
    pub kind: LiveKind,
    pub upload_id: Uuid,
    /// The upload as it is when the news goes out, read by the first of this instance's
    /// listeners who needs it and shared with the others (a burst's every photo read once, not
    /// once per listener).
    pub upload: Arc<OnceCell<Option<UploadRow>>>,
}

#[derive(Debug)]
pub struct LiveHub {
    sender: broadcast::Sender<LiveEvent>,
    poke: Notify,
    closing: watch::Sender<bool>,
}

impl Default for LiveHub {
    fn default() -> Self {
        Self { sender: broadcast::channel(1024).0, poke: Notify::new(), closing: watch::channel(false).0 }
    }
}

impl LiveHub {
    pub fn subscribe(&self) -> (broadcast::Receiver<LiveEvent>, watch::Receiver<bool>) {
        let receiver = self.sender.subscribe();
        self.poke.notify_one();
        (receiver, self.closing.subscribe())
    }

    /// A change was committed on this instance: poll now.
    pub fn poke(&self) {
        self.poke.notify_one();
    }

    /// The server is stopping: end every stream, so open slideshows do not hold up shutdown.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Polls the feed while anyone listens, until the hub closes.
    pub async fn run(&self, db: Db) {
        let mut seen: HashMap<i64, Instant> = HashMap::new();
        let mut closing = self.closing.subscribe();
        loop {
            if *closing.borrow() {
                return;
            }
            // Idle while nobody listens. A listener who arrives may hear of changes up to one
            // window old: news a slideshow can use, and nothing is swallowed.
            if self.sender.receiver_count() > 0 {
                match db.live_feed_since(Utc::now() - WINDOW).await {
                    Ok(rows) => {
                        for row in rows {
                            if seen.insert(row.seq, Instant::now()).is_some() {
                                continue;
                            }
                            let kind = LiveKind::parse(&row.kind);
                            // No listener left is fine: the next poll finds nobody and idles.
                            let news = LiveEvent {
                                event_id: row.event_id,
                                kind,
                                upload_id: row.upload_id,
                                upload: Arc::default(),
                            };
                            let _ = self.sender.send(news);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "could not read the live feed"),
                }
                seen.retain(|_, at| at.elapsed() < WINDOW * 2);
            }
            tokio::select! {
                () = self.poke.notified() => {}
                () = tokio::time::sleep(POLL) => {}
                _ = closing.changed() => {}
            }
        }
    }
}
