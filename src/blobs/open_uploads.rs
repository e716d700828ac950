//! The multipart uploads open in an S3 bucket at one key, found by listing them
//! (ListMultipartUploads, which object_store does not offer) and aborted.
//!
//! The store tells a multipart upload's id only in its answer to the creation, so an instance
//! that dies between that answer and the record leaves an upload nobody knows the id of. The
//! key is known before the store is asked (the staged upload's record, the resumable resource's
//! row): whoever cleans up lists what is open at that key and aborts all of it.
//!
//! The request is a `GET /<bucket>/?uploads&prefix=<key>`, signed by the store's own signer
//! (a presigned URL: the endpoint, region and credentials object_store was given) and sent
//! with the same HTTP client crate. A server that does not implement the listing (it answers
//! 501 Not Implemented, as `s3s-fs` does) is asked once: from then on only uploads whose id
//! was recorded are aborted, and the bucket's lifecycle rule removes the rest.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use object_store::aws::AmazonS3;
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::signer::{Method, SignedUrlOptions, Signer};
use serde::Deserialize;

/// How long a signed listing request stays valid, and how long one may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Pages read at most for one key (S3 gives up to 1,000 uploads a page): a key of Confetti's
/// is written by one upload, so more than a few open there is already a fault.
const MAX_PAGES: usize = 10;
/// The most bytes of one page's answer read.
const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;

/// Lists and aborts the multipart uploads open at a key of one bucket.
#[derive(Clone)]
pub struct OpenUploads {
    store: Arc<AmazonS3>,
    client: s3_http::Client,
    /// Cleared when the server answered that it cannot list open uploads.
    listable: Arc<AtomicBool>,
}

impl std::fmt::Debug for OpenUploads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenUploads").field("listable", &self.listable.load(Ordering::Relaxed)).finish()
    }
}

/// One page of `ListMultipartUploadsResult`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct Page {
    upload: Vec<Upload>,
    is_truncated: bool,
    next_key_marker: Option<String>,
    next_upload_id_marker: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Upload {
    key: String,
    upload_id: String,
}

impl OpenUploads {
    pub fn new(store: Arc<AmazonS3>) -> anyhow::Result<Self> {
        let client = s3_http::Client::builder().timeout(REQUEST_TIMEOUT).pool_max_idle_per_host(1).build()?;
        Ok(Self { store, client, listable: Arc::new(AtomicBool::new(true)) })
    }

    /// Aborts every multipart upload open at `path` but `keep`; how many, or `None` when
    /// this server cannot list them. One that is gone meanwhile (completed, or aborted by
    /// another instance) is fine.
    pub async fn abort_all(&self, path: &Path, keep: Option<&str>) -> object_store::Result<Option<usize>> {
        let Some(ids) = self.list(path).await? else {
            return Ok(None);
        };
        let mut aborted = 0;
        for id in ids.iter().filter(|id| Some(id.as_str()) != keep) {
            match self.store.abort_multipart(path, id).await {
                Ok(()) => aborted += 1,
                Err(e) => tracing::debug!(error = %e, %path, "aborting a multipart upload found open"),
            }
        }
        Ok(Some(aborted))
    }

    /// The ids of the multipart uploads open at exactly `path`; `None` when this server
    /// cannot list them.
    pub async fn list(&self, path: &Path) -> object_store::Result<Option<Vec<String>>> {
        if !self.listable.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let mut ids = Vec::new();
        let mut markers: Option<(String, String)> = None;
        for _ in 0..MAX_PAGES {
            let Some(page) = self.page(path, markers.as_ref()).await? else {
                return Ok(None);
            };
            // A prefix also matches longer keys: only this one counts.
            ids.extend(page.upload.into_iter().filter(|u| u.key == path.as_ref()).map(|u| u.upload_id));
            match (page.is_truncated, page.next_key_marker, page.next_upload_id_marker) {
                (true, Some(key), Some(id)) => markers = Some((key, id)),
                _ => return Ok(Some(ids)),
            }
        }
        tracing::warn!(%path, found = ids.len(), "more multipart uploads open at one key than are read; the rest next time");
        Ok(Some(ids))
    }

    async fn page(&self, path: &Path, markers: Option<&(String, String)>) -> object_store::Result<Option<Page>> {
        let mut query = vec![("uploads".to_owned(), String::new()), ("prefix".to_owned(), path.to_string())];
        if let Some((key, id)) = markers {
            query.push(("key-marker".to_owned(), key.clone()));
            query.push(("upload-id-marker".to_owned(), id.clone()));
        }
        let options = SignedUrlOptions::new().with_query(query);
        // The bucket itself: the empty path is the bucket's URL with a trailing slash.
        let url = self.store.signed_url_opts(Method::GET, &Path::default(), REQUEST_TIMEOUT, &options).await?;
        let mut response = self.client.get(url.as_str()).send().await.map_err(failed)?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > MAX_PAGE_BYTES {
                return Err(generic(format!("a listing of open uploads longer than {MAX_PAGE_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&body);
        if let Some(why) = cannot_list(status.as_u16(), &text) {
            self.listable.store(false, Ordering::Relaxed);
            tracing::warn!(
                "{why}: a multipart upload left by an instance that died before recording its id \
                 stays until the bucket's lifecycle rule removes it (asked again after a restart)"
            );
            return Ok(None);
        }
        if !status.is_success() {
            return Err(generic(format!("listing open multipart uploads: {status}: {}", text.trim())));
        }
        quick_xml::de::from_str(&text)
            .map(Some)
            .map_err(|e| generic(format!("reading the listing of open multipart uploads: {e}")))
    }
}

/// Why the listing will not be had from this server with these credentials, if it will not:
/// the server has no such operation, or the credentials may not use it. Asking again every
/// time would fail every cleanup for good.
fn cannot_list(status: u16, body: &str) -> Option<&'static str> {
    if status == 501 || status == 405 || body.contains("<Code>NotImplemented</Code>") {
        return Some("this S3 server cannot list open multipart uploads");
    }
    (status == 403).then_some("the S3 credentials may not list open multipart uploads (s3:ListBucketMultipartUploads)")
}

fn failed(e: s3_http::Error) -> object_store::Error {
    object_store::Error::Generic { store: "S3", source: Box::new(e) }
}

fn generic(message: String) -> object_store::Error {
    object_store::Error::Generic { store: "S3", source: message.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_the_listing_is_read_with_its_markers() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
            <ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Bucket>confetti</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>
              <NextKeyMarker>originals/e/u</NextKeyMarker><NextUploadIdMarker>b</NextUploadIdMarker>
              <Prefix>originals/e/u</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>true</IsTruncated>
              <Upload><Key>originals/e/u</Key><UploadId>a</UploadId><Initiated>2026-12-06T04:00:00.000Z</Initiated></Upload>
              <Upload><Key>originals/e/u</Key><UploadId>b</UploadId><Initiated>2026-12-06T04:00:01.000Z</Initiated></Upload>
            </ListMultipartUploadsResult>"#;
        let page: Page = quick_xml::de::from_str(xml).expect("page");
        let ids: Vec<_> = page.upload.iter().map(|u| u.upload_id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert!(page.is_truncated);
        assert_eq!(page.next_key_marker.as_deref(), Some("originals/e/u"));
        let empty: Page = quick_xml::de::from_str(
            "<ListMultipartUploadsResult><Bucket>c</Bucket><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>",
        )
        .expect("empty page");
        assert!(empty.upload.is_empty() && !empty.is_truncated);
    }

    #[test]
    fn a_server_without_the_listing_is_told_apart_from_a_failure() {
        let s3s = "<?xml version=\"1.0\"?><Error><Code>NotImplemented</Code><Message>x</Message></Error>";
        assert!(cannot_list(501, s3s).is_some());
        assert!(cannot_list(400, s3s).is_some());
        assert!(cannot_list(403, "<Error><Code>AccessDenied</Code></Error>").is_some());
        assert!(cannot_list(500, "<Error><Code>InternalError</Code></Error>").is_none());
        assert!(cannot_list(503, "<Error><Code>SlowDown</Code></Error>").is_none());
    }
}
