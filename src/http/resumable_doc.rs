//! What the API reference says about the resumable-upload headers: the request headers each
//! operation reads (so that a client generated from the document sends them) and the values of
//! the headers it answers with. The handlers are in `http::resumable`.

use utoipa::openapi::RefOr;

use super::openapi::either;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{IntoParams, PartialSchema, ToSchema};

fn header(name: &str, required: bool, schema: RefOr<Schema>, description: &str) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Header)
        .required(if required { Required::True } else { Required::False })
        .description(Some(description))
        .schema(Some(schema))
        .build()
}

fn interop() -> Parameter {
    header(
        "Upload-Draft-Interop-Version",
        false,
        Interop::schema(),
        "The draft's interop version the client speaks: 5 or 6 (drafts 03–05: reaching `Upload-Length` completes, and `Upload-Limit` names the time left `expires`), or the current draft's (absent, or any other). Echoed on every answer, refusals included.",
    )
}

/// `Upload-Draft-Interop-Version` alone: the offset retrieval, cancellation and `OPTIONS`.
pub struct InteropHeader;

impl IntoParams for InteropHeader {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![interop()]
    }
}

/// The headers a creation reads.
pub struct CreationHeaders;

impl IntoParams for CreationHeaders {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            header(
                "Upload-Metadata",
                true,
                Metadata::schema(),
                "tus syntax: `client_upload_id <base64>,filename <base64>[,caption <base64>]`, each value the base64 of UTF-8 text; other keys are ignored. Without a `client_upload_id` that is a non-nil UUID: 400 `invalid_client_upload_id`; a value that is not base64 of UTF-8: 400 `invalid_request`.",
            ),
            header(
                "Upload-Length",
                false,
                Offset::schema(),
                "The file's length in bytes. Required unless the request is complete (`Upload-Complete: ?1`) and says its length in `Content-Length`: 400 `upload_length_required`. Differs from that `Content-Length`: 400 `inconsistent_upload_length`.",
            ),
            header(
                "Upload-Complete",
                false,
                Complete::schema(),
                "`?1`: the body is the whole file (stored at once: the answer is the Upload). `?0` or absent: the body, if any, is the file's first bytes.",
            ),
            interop(),
        ]
    }
}

/// The headers an append reads.
pub struct AppendHeaders;

impl IntoParams for AppendHeaders {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            header(
                "Upload-Offset",
                true,
                Offset::schema(),
                "Where the body goes: the resource's offset (from the creation, the last append or `HEAD`). Another value: 409 `upload_offset_mismatch`; absent: 400 `invalid_request`.",
            ),
            header(
                "Upload-Complete",
                false,
                Complete::schema(),
                "`?1`: the body ends the file, which is then stored. `?0` or absent: more follows (for interop versions 5 and 6, reaching `Upload-Length` completes).",
            ),
            interop(),
        ]
    }
}

macro_rules! header_value {
    ($(#[$doc:meta])* $name:ident => $schema:expr) => {
        $(#[$doc])*
        pub struct $name;
        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                $schema
            }
        }
        impl ToSchema for $name {}
    };
}

header_value!(
    /// A structured-field Integer: a byte count, at most 15 digits.
    Offset => ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)).maximum(Some(999_999_999_999_999_i64)).into()
);
header_value!(
    /// A structured-field Boolean.
    Complete => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["?1", "?0"])).into()
);
header_value!(
    /// `Upload-Complete: ?1`: the file is stored.
    Stored => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["?1"])).into()
);
header_value!(
    /// `Upload-Complete: ?0`: more is to come.
    NotYet => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["?0"])).into()
);
header_value!(
    /// The interop version: a positive integer.
    Interop => ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).into()
);
header_value!(
    /// `max-size=N, max-age=S` (interop versions 5 and 6: `expires=S`).
    Limit => ObjectBuilder::new().schema_type(Type::String).pattern(Some("^max-size=[0-9]+, (max-age|expires)=[0-9]+$")).into()
);
header_value!(
    /// `Upload-Metadata`'s tus syntax.
    Metadata => ObjectBuilder::new().schema_type(Type::String).pattern(Some("client_upload_id [A-Za-z0-9+/=]+")).into()
);
header_value!(
    /// `application/partial-upload`.
    AcceptPatch => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["application/partial-upload"])).into()
);

/// A creation's `201`: the resource, or (for a complete body) the stored Upload.
pub struct CreatedBody;

either!(
    CreatedBody: OneOfBuilder(super::resumable::ResourceJson, super::views::UploadJson),
    "`UploadResource` with `Upload-Complete: ?0`; the stored `Upload` with `Upload-Complete: ?1` when the request carried the whole file."
);
