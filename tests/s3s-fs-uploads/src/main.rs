//! `s3s-fs` (crates.io, 0.14.1) with ListMultipartUploads, which it lacks (it answers 501).
//!
//! Every other operation Confetti uses goes to s3s-fs's own `FileSystem`, unchanged, and the
//! server is started as `s3s-fs` is (same options). The listing reads what s3s-fs itself
//! writes for an open upload, in its root directory: `.upload-<id>.json` while the upload is
//! open (removed when it completes or is aborted), and beside it
//! `.bucket-<base64 bucket>.object-<base64 key>.upload-<id>.metadata.json`, written when the
//! upload is created, which names its bucket and key.

use std::path::{Path, PathBuf};

use clap::Parser;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::dto::*;
use s3s::service::S3ServiceBuilder;
use s3s::{S3, S3Request, S3Response, S3Result, s3_error};
use s3s_fs::FileSystem;
use tokio::net::TcpListener;

#[derive(Debug, Parser)]
#[command(version)]
struct Opt {
    #[arg(long, default_value = "localhost")]
    host: String,
    #[arg(long, default_value = "8014")]
    port: u16,
    #[arg(long)]
    access_key: Option<String>,
    #[arg(long)]
    secret_key: Option<String>,
    /// Root directory of stored data.
    root: PathBuf,
}

struct WithUploads {
    fs: FileSystem,
    root: PathBuf,
}

/// Delegates each named operation to s3s-fs, and adds the listing.
macro_rules! s3_with_uploads {
    ($($op:ident: $input:ident => $output:ident),* $(,)?) => {
        #[async_trait::async_trait]
        impl S3 for WithUploads {
            $(
                async fn $op(&self, req: S3Request<$input>) -> S3Result<S3Response<$output>> {
                    self.fs.$op(req).await
                }
            )*

            async fn list_multipart_uploads(
                &self,
                req: S3Request<ListMultipartUploadsInput>,
            ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
                let input = req.input;
                let uploads = open_uploads(&self.root, &input.bucket).map_err(|e| s3_error!(e, InternalError))?;
                Ok(S3Response::new(page(input, uploads)))
            }
        }
    };
}

s3_with_uploads!(
    abort_multipart_upload: AbortMultipartUploadInput => AbortMultipartUploadOutput,
    complete_multipart_upload: CompleteMultipartUploadInput => CompleteMultipartUploadOutput,
    copy_object: CopyObjectInput => CopyObjectOutput,
    create_bucket: CreateBucketInput => CreateBucketOutput,
    create_multipart_upload: CreateMultipartUploadInput => CreateMultipartUploadOutput,
    delete_bucket: DeleteBucketInput => DeleteBucketOutput,
    delete_object: DeleteObjectInput => DeleteObjectOutput,
    delete_objects: DeleteObjectsInput => DeleteObjectsOutput,
    get_bucket_location: GetBucketLocationInput => GetBucketLocationOutput,
    get_object: GetObjectInput => GetObjectOutput,
    head_bucket: HeadBucketInput => HeadBucketOutput,
    head_object: HeadObjectInput => HeadObjectOutput,
    list_buckets: ListBucketsInput => ListBucketsOutput,
    list_objects: ListObjectsInput => ListObjectsOutput,
    list_objects_v2: ListObjectsV2Input => ListObjectsV2Output,
    list_parts: ListPartsInput => ListPartsOutput,
    put_object: PutObjectInput => PutObjectOutput,
    upload_part: UploadPartInput => UploadPartOutput,
    upload_part_copy: UploadPartCopyInput => UploadPartCopyOutput,
);

/// `(key, upload id, created)` of every upload open in `bucket`, in key then id order.
fn open_uploads(root: &Path, bucket: &str) -> std::io::Result<Vec<(String, String, std::time::SystemTime)>> {
    let b64 = base64_simd::URL_SAFE_NO_PAD;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let fields: Vec<&str> = name.split('.').collect();
        let [
            "",
            in_bucket,
            object,
            upload,
            "metadata",
            "json",
        ] = fields.as_slice()
        else {
            continue;
        };
        let (Some(in_bucket), Some(object), Some(id)) =
            (in_bucket.strip_prefix("bucket-"), object.strip_prefix("object-"), upload.strip_prefix("upload-"))
        else {
            continue;
        };
        let decode = |s: &str| b64.decode_to_vec(s).ok().and_then(|bytes| String::from_utf8(bytes).ok());
        if decode(in_bucket).as_deref() != Some(bucket) || !root.join(format!(".upload-{id}.json")).exists() {
            continue;
        }
        let Some(key) = decode(object) else { continue };
        let created = entry.metadata()?.modified()?;
        found.push((key, id.to_owned(), created));
    }
    found.sort();
    Ok(found)
}

/// One page of the listing, as S3 gives it: under the prefix, after the markers.
fn page(input: ListMultipartUploadsInput, uploads: Vec<(String, String, std::time::SystemTime)>) -> ListMultipartUploadsOutput {
    let prefix = input.prefix.clone().unwrap_or_default();
    let after = (input.key_marker.clone().unwrap_or_default(), input.upload_id_marker.clone().unwrap_or_default());
    let max = usize::try_from(input.max_uploads.unwrap_or(1000).clamp(1, 1000)).unwrap_or(1000);
    let mut listed: Vec<_> = uploads
        .into_iter()
        .filter(|(key, id, _)| key.starts_with(&prefix) && (key.clone(), id.clone()) > after)
        .collect();
    let truncated = listed.len() > max;
    listed.truncate(max);
    let next = listed.last().filter(|_| truncated).map(|(key, id, _)| (key.clone(), id.clone()));
    ListMultipartUploadsOutput {
        bucket: Some(input.bucket),
        prefix: input.prefix,
        key_marker: input.key_marker,
        upload_id_marker: input.upload_id_marker,
        max_uploads: Some(i32::try_from(max).unwrap_or(1000)),
        is_truncated: Some(truncated),
        next_key_marker: next.as_ref().map(|(key, _)| key.clone()),
        next_upload_id_marker: next.map(|(_, id)| id),
        uploads: Some(
            listed
                .into_iter()
                .map(|(key, id, created)| MultipartUpload {
                    key: Some(key),
                    upload_id: Some(id),
                    initiated: Some(Timestamp::from(created)),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let opt = Opt::parse();
    let root = std::fs::canonicalize(&opt.root)?;
    let fs = FileSystem::new(&root).map_err(|e| format!("opening {}: {e:?}", root.display()))?;
    let mut builder = S3ServiceBuilder::new(WithUploads { fs, root });
    if let (Some(ak), Some(sk)) = (opt.access_key, opt.secret_key) {
        builder.set_auth(SimpleAuth::from_single(ak, sk));
    }
    let service = builder.build();
    let listener = TcpListener::bind((opt.host.as_str(), opt.port)).await?;
    // The first line of its output, once it listens: the tests start it on port 0 and read the
    // port here, so no other process can take the port between a probe and this bind.
    println!("listening on {}", listener.local_addr()?);
    let http = ConnBuilder::new(TokioExecutor::new());
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                eprintln!("accepting a connection: {e}");
                continue;
            }
        };
        let conn = http.serve_connection(TokioIo::new(socket), service.clone()).into_owned();
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}
