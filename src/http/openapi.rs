//! The API reference, generated from the code: each handler's `#[utoipa::path]` (its doc
//! comment is the operation's summary and description), the request and response types'
//! `ToSchema`, and the router, built through `OpenApiRouter` so that a route cannot be served
//! without being documented. This module holds what the operations share: the document's
//! introduction, tags and security schemes; the problem answers (`problem`, `refusals!`)
//! whose codes are `ErrorCode`s; the shared parameters and response headers. The document is
//! made once when the router is built and served at `/api/v1/openapi.json`.

use std::sync::Arc;

use axum::Extension;
use axum::http::header;
use axum::response::IntoResponse;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{
    AllOfBuilder, ContentBuilder, OpenApi, Ref, RefOr, Required, Response, ResponseBuilder, header::HeaderBuilder,
};
use utoipa::{IntoParams, OpenApi as _, PartialSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ErrorCode, Problem};
use crate::http::AppState;

const PROBLEM_JSON: &str = "application/problem+json";

/// The document's frame: what the operations do not say themselves.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Confetti HTTP API",
        version = "1",
        description = include_str!("openapi_intro.md"),
    ),
    servers((url = "/", description = "This server.")),
    tags(
        (name = "system", description = "Health, readiness, capabilities, counters and this reference."),
        (name = "events", description = "Events: created by the admin, changed by their organiser."),
        (name = "guests", description = "Joining an event and \"who am I\"."),
        (name = "organiser", description = "Organiser login."),
        (name = "uploads", description = "Deduplicated uploads, listing, reading, hiding and deleting."),
        (name = "media", description = "Media bytes: originals, thumbnails, previews, and the event's export."),
        (name = "reactions", description = "Guests like and comment on each other's photos."),
        (name = "guestbook", description = "Short messages guests leave for the hosts, moderated like photos."),
        (name = "live", description = "The live event stream a slideshow follows."),
    ),
    components(schemas(Problem, ErrorCode)),
    modifiers(&Shared),
)]
struct Frame;

/// The security schemes and the answers several operations share by reference.
struct Shared;

impl utoipa::Modify for Shared {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let bearer = |description: &str| {
            SecurityScheme::Http(
                HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some(description)).build(),
            )
        };
        let cookie = |name: &str, description: &str| {
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(name, description)))
        };
        let cookie_rule = "Used only when there is no `Authorization` header. State-changing requests with it are refused (403 `cross_origin`) when `Origin` is present and not this server's.";
        components.add_security_schemes_from_iter([
            (
                "adminBearer",
                bearer(
                    "The instance admin's token: `CONFETTI_ADMIN_TOKEN`, or generated on first start, stored in the data directory (mode 0600) and printed once. Bearer only.",
                ),
            ),
            ("guestBearer", bearer("A guest's token (prefix `g_`), from joining an event.")),
            ("guestCookie", cookie(crate::auth::GUEST_COOKIE, &format!("The guest's token as set by joining. {cookie_rule}"))),
            (
                "organiserBearer",
                bearer("An organiser's token (prefix `o_`), from organiser login; valid for one event."),
            ),
            (
                "organiserCookie",
                cookie(crate::auth::ORGANISER_COOKIE, &format!("The organiser's token as set by login. {cookie_rule}")),
            ),
            (
                "screenCookie",
                cookie(
                    crate::auth::SCREEN_COOKIE,
                    &format!("A venue screen's token (prefix `s_`) as set by opening its screen link: reads what the event's guests see, writes nothing. {cookie_rule}"),
                ),
            ),
        ]);
        components.responses.extend([
            (
                "Internal".to_owned(),
                problem("Unexpected failure (database, storage, panic); logged.", &[ErrorCode::Internal]),
            ),
            (
                "IdempotencyKeyInFlight".to_owned(),
                with_header(
                    problem(
                        "`idempotency_key_in_flight`: an earlier request with this `Idempotency-Key` (same caller, method and path, same request) is still running; or this attempt held the key past its lease, a retry took it over, and this attempt's write was rolled back. Retry with the same key after `Retry-After` seconds.",
                        &[ErrorCode::IdempotencyKeyInFlight],
                    ),
                    "Retry-After",
                    schemas::Seconds::schema(),
                    "Seconds to wait before trying again.",
                ),
            ),
            (
                "Unauthenticated".to_owned(),
                problem("No valid guest or organiser credential.", &[ErrorCode::Unauthenticated]),
            ),
            (
                "BodyTooLarge".to_owned(),
                problem(
                    "The body is larger than 64 KiB (`limit_bytes`); nothing is written.",
                    &[ErrorCode::BodyTooLarge],
                ),
            ),
            ("EventNotFound".to_owned(), problem("No event with this slug.", &[ErrorCode::EventNotFound])),
            (
                "UploadNotFound".to_owned(),
                problem(
                    "Not a UUID, no such upload, deleted, or not visible to the caller (another event's upload; a hidden one for anyone but the organiser and its uploader).",
                    &[ErrorCode::NotFound],
                ),
            ),
            (
                "IdempotencyKeyReused".to_owned(),
                problem(
                    "`idempotency_key_reused`: this `Idempotency-Key` was already used by the same caller on this method and path for a different request (another body, query or content type). Nothing was run.",
                    &[ErrorCode::IdempotencyKeyReused],
                ),
            ),
        ]);
    }
}

/// A problem answer that can carry only `codes`: the `Problem` schema, its `code` narrowed.
pub fn problem(description: &str, codes: &[ErrorCode]) -> RefOr<Response> {
    let narrowed = ObjectBuilder::new().property(
        "code",
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(codes.iter().map(|code| code.as_str())))
            .build(),
    );
    let schema = AllOfBuilder::new().item(Ref::from_schema_name("Problem")).item(narrowed).build();
    ResponseBuilder::new()
        .description(description)
        .content(PROBLEM_JSON, ContentBuilder::new().schema(Some(Schema::AllOf(schema))).build())
        .build()
        .into()
}

/// A 403 that can also be `cross_origin`, for the writes a cookie can authenticate.
pub fn or_cross_origin(description: &str, codes: &[ErrorCode]) -> RefOr<Response> {
    let description = format!(
        "{description} `cross_origin`: the request was authenticated by a cookie and carries an `Origin` header that is not this server's own origin (the `Host` header or the public URL)."
    );
    let codes: Vec<ErrorCode> = codes.iter().copied().chain([ErrorCode::CrossOrigin]).collect();
    problem(&description, &codes)
}

/// A problem answer that also sends a header (`Retry-After`, `Content-Range`).
pub fn with_header(response: RefOr<Response>, name: &str, schema: RefOr<Schema>, description: &str) -> RefOr<Response> {
    match response {
        RefOr::T(mut response) => {
            let header = HeaderBuilder::new().schema(schema).description(Some(description)).build();
            response.headers.insert(name.to_owned(), header);
            RefOr::T(response)
        }
        reference => reference,
    }
}

/// One of the answers `Shared` defines, by reference.
pub fn shared(name: &str) -> RefOr<Response> {
    RefOr::Ref(Ref::from_response_name(name))
}

/// Declares a type listing an operation's refusals (status → answer), for its
/// `#[utoipa::path(responses(…))]`: `refusals!(Name { 404 => problem("…", &[NotFound]), })`.
macro_rules! refusals {
    ($name:ident { $($status:literal => $response:expr,)* }) => {
        pub(crate) struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> std::collections::BTreeMap<
                String,
                utoipa::openapi::RefOr<utoipa::openapi::response::Response>,
            > {
                #[allow(unused_imports)]
                use $crate::error::ErrorCode::*;
                #[allow(unused_imports)]
                use $crate::http::openapi::{or_cross_origin, problem, schemas, shared, with_header};
                #[allow(unused_imports)]
                use utoipa::PartialSchema;
                std::collections::BTreeMap::from([$(($status.to_string(), $response)),*])
            }
        }
    };
}
pub(crate) use refusals;

/// Declares the schema of a body that is either of two named schemas (whose shape depends on the caller or on
/// the request): `either!(Name: OneOfBuilder(A, B), "…")`; `AnyOfBuilder` where one may match both.
macro_rules! either {
    ($name:ident: $builder:ident($a:ty, $b:ty), $description:expr) => {
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                use utoipa::openapi::Ref;
                let either = utoipa::openapi::schema::$builder::new()
                    .item(Ref::from_schema_name(<$a as utoipa::ToSchema>::name()))
                    .item(Ref::from_schema_name(<$b as utoipa::ToSchema>::name()))
                    .description(Some($description));
                utoipa::openapi::RefOr::T(either.build().into())
            }
        }

        impl utoipa::ToSchema for $name {
            fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
                schemas.push((<$a as utoipa::ToSchema>::name().into(), <$a as utoipa::PartialSchema>::schema()));
                schemas.push((<$b as utoipa::ToSchema>::name().into(), <$b as utoipa::PartialSchema>::schema()));
                <$a as utoipa::ToSchema>::schemas(schemas);
                <$b as utoipa::ToSchema>::schemas(schemas);
            }
        }
    };
}
pub(crate) use either;

/// Schemas of headers and of bodies that are not JSON, which the document can say more about
/// than "a string".
pub mod schemas {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

    fn string(build: impl FnOnce(ObjectBuilder) -> ObjectBuilder) -> RefOr<Schema> {
        build(ObjectBuilder::new().schema_type(Type::String)).into()
    }

    fn bytes(media_type: &str) -> RefOr<Schema> {
        string(|s| s.content_media_type(media_type))
    }

    macro_rules! custom_schema {
        ($(#[$doc:meta])* $name:ident => $schema:expr) => {
            $(#[$doc])*
            pub struct $name;
            impl utoipa::PartialSchema for $name {
                fn schema() -> RefOr<Schema> {
                    $schema
                }
            }
            impl utoipa::ToSchema for $name {}
        };
    }

    custom_schema!(
        /// `true`.
        True => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["true"])).into()
    );
    custom_schema!(
        /// Whole seconds, at least one.
        Seconds => ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).into()
    );
    custom_schema!(
        /// A quoted SHA-256.
        Sha256ETag => string(|s| s.pattern(Some("^\"[0-9a-f]{64}\"$")))
    );
    custom_schema!(
        /// A derivative's tag: its upload's id, its kind, and `-avif` or `-webp` for those forms.
        DerivativeETag => string(|s| s.pattern(Some("^\"[0-9a-f-]{36}-(thumb|preview)(-avif|-webp)?\"$")))
    );
    custom_schema!(
        /// `Accept`: the answer depends on the request's `Accept` header.
        VaryAccept => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["Accept"])).into()
    );
    custom_schema!(
        /// Cached for a year, by the browser only, never revalidated.
        Immutable => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["private, max-age=31536000, immutable"])).into()
    );
    custom_schema!(
        /// Stored, but revalidated on every use: the event's cover may change under its URL.
        Revalidate => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["public, no-cache"])).into()
    );
    custom_schema!(
        /// `bytes`.
        Bytes => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["bytes"])).into()
    );
    custom_schema!(
        /// `nosniff`.
        NoSniff => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["nosniff"])).into()
    );
    custom_schema!(
        /// A satisfied range.
        ContentRange => string(|s| s.pattern(Some("^bytes [0-9]+-[0-9]+/[0-9]+$")))
    );
    custom_schema!(
        /// The length of a range that cannot be satisfied.
        UnsatisfiedRange => string(|s| s.pattern(Some("^bytes \\*/[0-9]+$")))
    );
    custom_schema!(
        /// The guest's session cookie.
        GuestCookie => string(|s| s.pattern(Some("^confetti_guest=")))
    );
    custom_schema!(
        /// The organiser's session cookie.
        OrganiserCookie => string(|s| s.pattern(Some("^confetti_organiser=")))
    );
    custom_schema!(
        /// The venue screen's cookie.
        ScreenCookie => string(|s| s.pattern(Some("^confetti_screen=")))
    );
    custom_schema!(
        /// `100-continue`.
        Continue => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["100-continue"])).into()
    );
    custom_schema!(
        /// `ok`.
        Ok => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["ok"])).into()
    );
    custom_schema!(
        /// `ready`.
        Ready => ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["ready"])).into()
    );
    custom_schema!(
        /// Prometheus counters.
        MetricsText => string(|s| s.examples([METRICS_EXAMPLE]))
    );
    custom_schema!(
        /// An OpenAPI 3.1 document.
        OpenApiDocument => ObjectBuilder::new().schema_type(Type::Object).description(Some("An OpenAPI 3.1 document.")).into()
    );
    custom_schema!(
        /// A ZIP archive.
        Zip => bytes("application/zip")
    );
    /// Server-sent events, described by their events: the stream is a sequence of `LiveUploadEvent`,
    /// `LiveRemovedEvent`, `LiveGuestbookEvent` and `LiveGuestbookRemovedEvent` (each an `event:` line and a `data:` line holding its `data` as JSON, ended by a blank
    /// line), with comment lines between them that keep the connection open.
    pub struct EventStream;

    impl utoipa::PartialSchema for EventStream {
        fn schema() -> RefOr<Schema> {
            use utoipa::openapi::{ArrayBuilder, OneOfBuilder, Ref};
            let one = OneOfBuilder::new()
                .item(Ref::from_schema_name("LiveUploadEvent"))
                .item(Ref::from_schema_name("LiveRemovedEvent"))
                .item(Ref::from_schema_name("LiveGuestbookEvent"))
                .item(Ref::from_schema_name("LiveGuestbookRemovedEvent"));
            let description = format!("{EVENT_STREAM}\n\n```\n{EVENT_STREAM_EXAMPLE}```");
            ArrayBuilder::new().items(one).description(Some(description)).into()
        }
    }

    impl utoipa::ToSchema for EventStream {
        fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
            use utoipa::openapi::Ref;
            let event = |name: &str, description: &str, data: RefOr<Schema>| -> RefOr<Schema> {
                ObjectBuilder::new()
                    .description(Some(description))
                    .property("event", ObjectBuilder::new().schema_type(Type::String).enum_values(Some([name])))
                    .required("event")
                    .property("data", data)
                    .required("data")
                    .into()
            };
            let removed: RefOr<Schema> = ObjectBuilder::new()
                .property(
                    "id",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::Uuid))),
                )
                .required("id")
                .into();
            schemas.push((
                "LiveUploadEvent".into(),
                event(
                    "upload",
                    "`event: upload`: an upload became `ready`, or a `ready` one was shown again; `data:` the Upload as this listener may see it.",
                    Ref::from_schema_name("Upload").into(),
                ),
            ));
            schemas.push((
                "LiveRemovedEvent".into(),
                event("removed", "`event: removed`: an upload was hidden or deleted; `data:` its id.", removed.clone()),
            ));
            schemas.push((
                "LiveGuestbookEvent".into(),
                event(
                    "guestbook",
                    "`event: guestbook`: a guestbook message was written, approved or shown again; `data:` the message as this listener may see it.",
                    Ref::from_schema_name("GuestbookMessage").into(),
                ),
            ));
            schemas.push((
                "LiveGuestbookRemovedEvent".into(),
                event(
                    "guestbook_removed",
                    "`event: guestbook_removed`: a guestbook message was hidden or deleted; `data:` its id.",
                    removed,
                ),
            ));
            <crate::http::guestbook::MessageJson as utoipa::ToSchema>::schemas(schemas);
            schemas.push((
                "GuestbookMessage".into(),
                <crate::http::guestbook::MessageJson as utoipa::PartialSchema>::schema(),
            ));
            <crate::http::views::UploadJson as utoipa::ToSchema>::schemas(schemas);
            schemas.push(("Upload".into(), <crate::http::views::UploadJson as utoipa::PartialSchema>::schema()));
        }
    }
    custom_schema!(
        /// An original, as uploaded.
        Original => bytes("application/octet-stream")
    );
    custom_schema!(
        /// A JPEG the server made.
        Jpeg => bytes("image/jpeg")
    );
    custom_schema!(
        /// A WebP the server made.
        Webp => bytes("image/webp")
    );
    custom_schema!(
        /// An AVIF the server made.
        Avif => bytes("image/avif")
    );

    /// An object schema that also says it has at least one member (`minProperties: 1`): a body of optional members
    /// of which some must be there. (utoipa's own `min_properties` writes `maxProperties`.)
    pub fn at_least_one_member(mut schema: RefOr<Schema>) -> RefOr<Schema> {
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            object.min_properties = Some(1);
        }
        schema
    }

    const METRICS_EXAMPLE: &str = "# HELP confetti_idempotency_executions_total writes that claimed a key and ran\n# TYPE confetti_idempotency_executions_total counter\nconfetti_idempotency_executions_total 0\n# HELP confetti_idempotency_replays_total recorded answers replayed\n# TYPE confetti_idempotency_replays_total counter\nconfetti_idempotency_replays_total 0\n# HELP confetti_idempotency_mismatches_total keys reused with another request (422)\n# TYPE confetti_idempotency_mismatches_total counter\nconfetti_idempotency_mismatches_total 0\n# HELP confetti_idempotency_in_flight_total attempts answered 409 while the key was held\n# TYPE confetti_idempotency_in_flight_total counter\nconfetti_idempotency_in_flight_total 0\n# HELP confetti_idempotency_takeovers_total claims taken over after their lease expired\n# TYPE confetti_idempotency_takeovers_total counter\nconfetti_idempotency_takeovers_total 0\n# HELP confetti_idempotency_released_total keys released after a refusal or failure\n# TYPE confetti_idempotency_released_total counter\nconfetti_idempotency_released_total 0\n# HELP confetti_idempotency_swept_total completed keys forgotten after the retention\n# TYPE confetti_idempotency_swept_total counter\nconfetti_idempotency_swept_total 0\n";
    const EVENT_STREAM: &str = "A `text/event-stream`, read as the sequence of its events (the items here, in the order sent): each is an `event:` line naming it (`upload`, `removed`, `guestbook` or `guestbook_removed`) and one `data:` line holding the item's `data` as JSON, ended by a blank line. Comment lines (`:`) keep the connection open and carry nothing. No event has an `id:`.";
    const EVENT_STREAM_EXAMPLE: &str = "event: upload\ndata: {\"id\":\"0190a5a8-5e2b-7c3d-8e4f-1a2b3c4d5e6f\",\"event\":\"hochzeit-anna-ben-x7k2\",\"status\":\"ready\",…}\n\nevent: removed\ndata: {\"id\":\"0190a5a8-5e2b-7c3d-8e4f-1a2b3c4d5e6f\"}\n\n";
}

/// `{slug}`: the event's slug.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub struct SlugParam {
    /// The event's slug.
    #[param(pattern = "^[a-z0-9-]{1,80}$")]
    slug: String,
}

/// `{id}`: an upload's id.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub struct UploadIdParam {
    /// The upload's id. Not a UUID: 404 `not_found`.
    id: uuid::Uuid,
}

/// The `Idempotency-Key` header of the writes that take part (`http::idempotency::Keyed`).
pub struct IdempotencyKeyParam;

impl IntoParams for IdempotencyKeyParam {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let schema = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(255))
            .pattern(Some("^[ -~]+$"));
        vec![
            ParameterBuilder::new()
                .name("Idempotency-Key")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(include_str!("openapi_idempotency_key.md").trim_end()))
                // No example: a tool that sends examples would send the same key with every request, and
                // each one after the first would be answered as a replay or refused as a reused key.
                .schema(Some(schema))
                .build(),
        ]
    }
}

/// The document, as JSON text: the frame and every operation `OpenApiRouter` collected, with
/// the OpenAPI 3.1 members utoipa's model has no field for.
pub fn document(mut openapi: OpenApi) -> Arc<str> {
    name_linked_operations(&mut openapi);
    openapi
        .extensions
        .get_or_insert_with(Default::default)
        .insert("jsonSchemaDialect".into(), "https://spec.openapis.org/oas/3.1/dialect/base".into());
    openapi
        .info
        .extensions
        .get_or_insert_with(Default::default)
        .insert("summary".into(), "Self-hosted photo-upload gallery for events.".into());
    match serde_json::to_string_pretty(&openapi) {
        Ok(text) => Arc::from(text),
        Err(e) => {
            tracing::error!(error = %e, "the API reference could not be written");
            Arc::from("{}")
        }
    }
}

/// utoipa 5 writes a link's `operationId` and `requestBody` as `operation_id` and `request_body`: moved to
/// where OpenAPI looks.
fn name_linked_operations(openapi: &mut OpenApi) {
    for item in openapi.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.options,
            &mut item.head,
            &mut item.patch,
            &mut item.trace,
        ];
        for operation in operations.into_iter().flatten() {
            for response in operation.responses.responses.values_mut() {
                let RefOr::T(response) = response else { continue };
                for link in response.links.values_mut() {
                    let RefOr::T(link) = link else { continue };
                    let id = std::mem::take(&mut link.operation_id);
                    let extensions = link.extensions.get_or_insert_with(Default::default);
                    if !id.is_empty() {
                        extensions.insert("operationId".into(), id.into());
                    }
                    if let Some(body) = link.request_body.take() {
                        extensions.insert("requestBody".into(), body);
                    }
                }
            }
        }
    }
}

/// The router of every documented route, starting from the document's frame.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(Frame::openapi()).routes(routes!(openapi_json))
}

/// The document, made when the router was built.
#[derive(Clone)]
pub struct Document(pub Arc<str>);

/// This API reference
///
/// This document (OpenAPI 3.1), generated from the server's code when it starts.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    operation_id = "getOpenApi",
    tag = "system",
    security(()),
    responses((status = 200, description = "The API reference.", content_type = "application/json", body = inline(schemas::OpenApiDocument))),
)]
async fn openapi_json(Extension(Document(text)): Extension<Document>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], text.to_string())
}
