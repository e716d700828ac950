//! Reading what the server streams: the next event of a live stream, the entries of an export.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

/// The entries of a ZIP archive, by name.
pub async fn unzip(bytes: Vec<u8>) -> HashMap<String, Vec<u8>> {
    let reader = async_zip::base::read::mem::ZipFileReader::new(bytes).await.expect("a valid ZIP");
    let mut entries = HashMap::new();
    for index in 0..reader.file().entries().len() {
        let name = reader.file().entries()[index].filename().as_str().expect("utf-8 name").to_owned();
        let mut data = Vec::new();
        reader.reader_with_entry(index).await.expect("entry").read_to_end_checked(&mut data).await.expect("read");
        entries.insert(name, data);
    }
    entries
}

/// The next server-sent event that is not a keep-alive: its name and JSON data.
pub async fn next_sse(stream: &mut reqwest::Response) -> (String, Value) {
    let mut buffer = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut kind = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    kind = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if let Some(kind) = kind {
                return (kind, serde_json::from_str(&data).expect("JSON data"));
            }
            continue;
        }
        let chunk = tokio::time::timeout_at(deadline, stream.chunk()).await.expect("an event within 30 s");
        let chunk = chunk.expect("stream").expect("the stream stays open");
        buffer.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
    }
}
