//! `live`: a server-sent event stream for slideshows. `upload` (the Upload) when one becomes
//! visible, `removed` (`{"id"}`) when one is hidden or deleted; `guestbook` (the message) and
//! `guestbook_removed` (`{"id"}`) likewise for the guestbook. Each listener hears what it may
//! see, read live when the news arrives. The stream ends when the server stops.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::Viewer;
use super::guestbook::{MessageJson, visible_message};
use super::openapi::{SlugParam, refusals, schemas};
use super::uploads::{may_see, visible_upload};
use super::views::UploadJson;
use crate::db::live::LiveKind;
use crate::db::uploads::UploadRow;
use crate::domain::EventSlug;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::live::LiveEvent;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(live))
}

/// Live news of the event, for slideshows
///
/// A server-sent event stream (`text/event-stream`) for a guest of the event or its organiser: what a slideshow
/// needs.
///
/// - `event: upload`, `data:` the Upload as JSON (schema `Upload`, as this listener may see it, read when the news
///   arrives): an upload became `ready`, or a `ready` upload was shown again by the organiser. Uploads hidden or
///   gone again by then are left out; a failed upload is never announced.
/// - `event: removed`, `data:` `{"id":"<upload id>"}`: an upload was hidden or deleted.
/// - `event: guestbook`, `data:` the GuestbookMessage as JSON, as this listener may see it: a message was written,
///   approved or shown again (one waiting for approval reaches only its writer and the organiser).
/// - `event: guestbook_removed`, `data:` `{"id":"<message id>"}`: a message was hidden or deleted.
/// - A comment line (`:`) after 15 s without news keeps the connection open.
///
/// Events carry no `id:`; a reconnecting client reloads the listing instead of resuming. A listener who has just
/// connected may hear of changes up to 30 s old; news from other server instances sharing the database arrives
/// within about half a second. The stream ends when the server stops (reconnect then).
#[utoipa::path(
    get,
    path = "/api/v1/events/{slug}/live",
    operation_id = "liveEvents",
    tag = "live",
    security(("guestBearer" = []), ("guestCookie" = []), ("organiserBearer" = []), ("organiserCookie" = []), ("screenCookie" = [])),
    params(SlugParam),
    responses(
        (status = 200, description = "The stream; open until the client leaves or the server stops.", content_type = "text/event-stream", body = inline(schemas::EventStream), headers(("Cache-Control" = String, description = "`no-cache`."))),
        LiveEventsRefusals,
    ),
)]
async fn live(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(slug): Path<String>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let slug = EventSlug::parse(&slug)?;
    let event = state.db.event_by_slug(slug.as_str()).await?.ok_or(ApiError::EventNotFound)?;
    if !viewer.can_see_event(event.id) {
        return Err(if viewer.guest.is_some() { ApiError::WrongEvent } else { ApiError::Forbidden });
    }
    let (news, closing) = state.live.subscribe();
    let listener = Listener { state, viewer, event_id: event.id, news, closing };
    let stream = futures_util::stream::unfold(listener, |mut listener| async move {
        let event = listener.next().await?;
        Some((Ok(event), listener))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

struct Listener {
    state: AppState,
    viewer: Viewer,
    event_id: Uuid,
    news: broadcast::Receiver<LiveEvent>,
    closing: watch::Receiver<bool>,
}

impl Listener {
    /// Whether a screen's link still opens the event (always true for guests and organisers).
    async fn screen_still_open(&self) -> bool {
        let Some(screen) = &self.viewer.screen else { return true };
        if self.viewer.guest.is_some() || self.viewer.organiser.is_some() {
            return true;
        }
        matches!(self.state.db.screen_event(&screen.token_hash).await, Ok(Some(e)) if e.id == screen.event_id)
    }

    /// The upload the news is about, as this listener may see it, read when the news went out.
    /// One read serves every listener of this instance: read as no guest sees it, it is what
    /// each would read, `liked_by_me` aside, which is false for all while nobody has liked it
    /// (a new photo's case). A guest reads their own once someone has.
    async fn upload(&self, news: &LiveEvent) -> ApiResult<UploadRow> {
        let shared = news.upload.get_or_try_init(|| self.state.db.upload_by_id(news.upload_id, None)).await;
        match shared {
            Ok(Some(row)) if row.likes == 0 || self.viewer.guest_id().is_none() => {
                if may_see(&self.viewer, row) {
                    Ok(row.clone())
                } else {
                    Err(ApiError::NotFound)
                }
            }
            Ok(None) => Err(ApiError::NotFound),
            // Liked already, or the shared read failed: this listener's own read.
            Ok(Some(_)) | Err(_) => visible_upload(&self.state, &self.viewer, news.upload_id).await,
        }
    }

    /// The next news for this listener; `None` ends the stream.
    async fn next(&mut self) -> Option<Event> {
        loop {
            let item = tokio::select! {
                item = self.news.recv() => item,
                _ = self.closing.wait_for(|closing| *closing) => return None,
            };
            let news = match item {
                Ok(news) if news.event_id == self.event_id => news,
                Ok(_) => continue,
                // News was lost (a `removed` among it, perhaps): end the stream; the client
                // reconnects and reads the gallery afresh.
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "a live listener fell behind; ending its stream");
                    return None;
                }
                Err(RecvError::Closed) => return None,
            };
            match news.kind {
                LiveKind::Removed | LiveKind::MessageRemoved => {
                    let id = json!({ "id": news.upload_id }).to_string();
                    return Some(Event::default().event(news.kind.as_str()).data(id));
                }
                LiveKind::Message if !self.screen_still_open().await => return None,
                // Read now, as this listener may see it (waiting messages reach their writer and the organiser).
                LiveKind::Message => match visible_message(&self.state, &self.viewer, news.upload_id).await {
                    Ok(row) if !row.hidden => {
                        match Event::default().event("guestbook").json_data(MessageJson::new(&row)) {
                            Ok(event) => return Some(event),
                            Err(e) => tracing::warn!(error = %e, "could not encode live news"),
                        }
                    }
                    _ => {}
                },
                // A screen whose link was revoked or replaced since the stream began sees no more.
                LiveKind::Upload if !self.screen_still_open().await => return None,
                // Read now, as this listener may see it: it may be hidden or gone again already.
                LiveKind::Upload => match self.upload(&news).await {
                    Ok(row) if !row.hidden => match Event::default().event("upload").json_data(UploadJson::new(&row)) {
                        Ok(event) => return Some(event),
                        Err(e) => tracing::warn!(error = %e, "could not encode live news"),
                    },
                    _ => {}
                },
            }
        }
    }
}

refusals!(LiveEventsRefusals {
    401 => shared("Unauthenticated"),
    403 => problem("`wrong_event`: a guest of another event. `forbidden`: only the organiser of another event.", &[WrongEvent, Forbidden]),
    404 => shared("EventNotFound"),
    500 => shared("Internal"),
});
