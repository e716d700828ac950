//! Moderating several photos at once: each of the organiser's actions on one upload of their
//! event, inside the request's one transaction, telling what changed and what the live stream
//! must hear. Another event's upload, a deleted one and an unknown id are all "not found".

use uuid::Uuid;

use super::live::LiveKind;
use super::{Tx, on_tx};
use crate::domain::{RejectReason, Review, UploadStatus};

/// What the organiser does to each selected upload.
#[derive(Clone, Debug)]
pub enum Moderation {
    /// Approves it (its review ends); a rejected upload is shown again too.
    Approve,
    /// Hides it with a reason its uploader reads.
    Reject(RejectReason),
    Hide,
    Show,
    /// Marks it deleted; the caller refunds and removes its bytes.
    Delete,
}

/// What became of one upload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moderated {
    Changed,
    /// It already was as asked.
    Unchanged,
    /// No live upload of this event has this id.
    NotFound,
}

/// One upload's effect: what became of it, what the live stream hears, and for a delete the
/// owner and bytes to refund.
#[derive(Clone, Copy, Debug)]
pub struct Effect {
    pub moderated: Moderated,
    pub news: Option<LiveKind>,
    pub refund: Option<(Uuid, i64)>,
}

impl Effect {
    fn of(moderated: Moderated) -> Self {
        Self { moderated, news: None, refund: None }
    }
}

impl Tx {
    /// Applies `action` to the event's live upload `id`.
    pub async fn moderate(&mut self, event_id: Uuid, id: Uuid, action: &Moderation) -> sqlx::Result<Effect> {
        let row: Option<(String, bool, String, Option<String>)> = on_tx!(self, tx => sqlx::query_as(
            "SELECT status, hidden, review, rejected_reason FROM uploads
             WHERE id = $1 AND event_id = $2 AND deleted_at IS NULL",
        )
        .bind(id)
        .bind(event_id)
        .fetch_optional(&mut **tx)
        .await)?;
        let Some((status, hidden, review, rejected)) = row else {
            return Ok(Effect::of(Moderated::NotFound));
        };
        let decode = |e: String| sqlx::Error::Decode(e.into());
        let ready = UploadStatus::try_from(status).map_err(decode)? == UploadStatus::Ready;
        let approved = Review::try_from(review).map_err(decode)? == Review::Approved;
        let changed = |news: Option<LiveKind>| Effect { moderated: Moderated::Changed, news, refund: None };
        Ok(match action {
            Moderation::Approve => {
                let shows = rejected.is_some();
                if approved && !shows {
                    return Ok(Effect::of(Moderated::Unchanged));
                }
                self.approve_upload(id).await?;
                if shows {
                    self.set_upload_hidden(id, false).await?;
                }
                let visible = ready && (!hidden || shows);
                changed(visible.then_some(LiveKind::Upload))
            }
            Moderation::Reject(reason) => {
                if hidden && rejected.as_deref() == Some(reason.as_str()) {
                    return Ok(Effect::of(Moderated::Unchanged));
                }
                on_tx!(self, tx => sqlx::query(
                    "UPDATE uploads SET hidden = TRUE, rejected_reason = $2, hidden_by_block = FALSE WHERE id = $1",
                )
                .bind(id)
                .bind(reason.as_str())
                .execute(&mut **tx)
                .await
                .map(|r| r.rows_affected()))?;
                changed((!hidden).then_some(LiveKind::Removed))
            }
            Moderation::Hide | Moderation::Show => {
                let hide = matches!(action, Moderation::Hide);
                match self.set_upload_hidden(id, hide).await? {
                    Some(Some(_)) if hide => changed(Some(LiveKind::Removed)),
                    Some(Some(_)) => changed((ready && approved).then_some(LiveKind::Upload)),
                    _ => Effect::of(Moderated::Unchanged),
                }
            }
            Moderation::Delete => match self.mark_upload_deleted(id).await? {
                Some(refund) => {
                    Effect { moderated: Moderated::Changed, news: Some(LiveKind::Removed), refund: Some(refund) }
                }
                None => Effect::of(Moderated::NotFound),
            },
        })
    }
}
