// The page's words in German and English. The language comes from the browser and can be
// switched; the choice is remembered on this device.

const STRINGS = {
  de: {
    switch_to: 'English',
    tagline: 'Fotos vom Fest, an einem Ort.',
    need_link: 'Öffne den Link aus dem QR-Code des Festes, um Fotos hochzuladen.',
    no_event: 'Dieses Fest gibt es nicht (mehr). Prüfe den Link.',
    your_name: 'Dein Name',
    join_hint: 'Damit alle sehen, von wem die Fotos sind. Kein Konto, keine App.',
    join: 'Los geht’s',
    hello: 'Hallo, {name}!',
    choose_photos: 'Fotos hochladen',
    choose_hint: 'Kamera oder Galerie. Die Fotos werden auf diesem Gerät vorgemerkt und gesendet, sobald die Verbindung es zulässt – auch nach einem Neuladen.',
    quota: '{used} von {total} belegt',
    quota_left: 'noch {left} frei',
    quota_photos: 'Du kannst noch etwa {n} Fotos hinzufügen.',
    quota_photos_one: 'Du kannst noch etwa 1 Foto hinzufügen.',
    quota_almost_full: 'Fast voll – vielleicht passt noch ein kleines Foto.',
    quota_full: 'Dein Speicher ist voll.',
    uploads_closed_button: 'Uploads sind geschlossen',
    uploads_closed_hint: 'Die Gastgeber haben die Uploads vorerst geschlossen. Schon gesendete Fotos bleiben in der Galerie.',
    waiting_connection: 'Warte auf die Verbindung – deine Fotos sind auf diesem Handy sicher und werden von selbst gesendet.',
    waiting_server: 'Der Server ist gerade ausgelastet – deine Fotos sind auf diesem Handy sicher und werden von selbst gesendet.',
    offline_idle: 'Gerade keine Verbindung.',
    state_queued: 'Wartet',
    state_uploading: 'Wird gesendet …',
    state_done: 'Hochgeladen',
    state_failed: 'Noch nicht gesendet',
    state_refused: 'Nicht angenommen',
    already: 'Schon hochgeladen',
    retry: 'Jetzt senden',
    remove: 'Entfernen',
    discard: 'Aus der Liste entfernen',
    msg_queued: 'In der Warteschlange – kommt nach den Fotos davor dran.',
    msg_wait_connection: 'Wartet auf die Verbindung.',
    msg_wait_network: 'Keine Antwort – wird gleich von selbst noch einmal versucht.',
    msg_wait_server: 'Der Server ist ausgelastet – wird gleich von selbst noch einmal versucht.',
    next_try: 'Nächster Versuch von selbst in etwa {t}.',
    dur_s: '{n} s',
    dur_min: '{n} Min.',
    server_says: 'Der Server sagt: „{detail}“',
    summary_progress: '{sent} von {total} gesendet',
    summary_left_min: 'noch etwa {n} Min.',
    summary_left_under_min: 'noch weniger als eine Minute',
    summary_waiting: 'wartet auf die Verbindung',
    summary_all: 'Alle {n} Fotos gesendet',
    summary_all_one: 'Foto gesendet',
    summary_already: '{n} schon da',
    summary_refused: '{n} nicht angenommen',
    show_all: 'Alle zeigen ({n})',
    show_less: 'Weniger zeigen',
    link_incomplete: 'Dieser Link ist unvollständig – scanne den QR-Code noch einmal oder frag die Gastgeber nach dem vollständigen Link.',
    err_network: 'Der Server ist nicht erreichbar.',
    err_server: 'Der Server hatte ein Problem ({status}).',
    err_server_busy: 'Der Server hat es mehrmals nicht angenommen.',
    err_refused: 'Der Server hat dieses Foto nicht angenommen.',
    err_quota_exceeded: 'Dein Speicher ist voll: noch {left} von {total} frei, dieses Foto hat {size}.',
    err_file_too_large: 'Datei zu groß: höchstens {max} pro Foto.',
    err_image_too_large: 'Bild zu groß: {px} Megapixel, höchstens {max}.',
    err_unsupported_media_type: 'Kein unterstütztes Bild (JPEG, PNG, WebP oder GIF).',
    err_upload_deleted: 'Dieses Foto wurde gelöscht; es wird nicht erneut gesendet.',
    err_client_upload_id_conflict: 'Dieses Foto kollidiert mit einem anderen Upload. Bitte wähle es neu aus.',
    err_client_upload_id_reused: 'Dieses Foto kollidiert mit einem anderen Upload. Bitte wähle es neu aus.',
    err_uploads_closed: 'Uploads sind für dieses Fest geschlossen.',
    err_unauthenticated: 'Bitte gib deinen Namen erneut ein.',
    err_wrong_event: 'Du bist einem anderen Fest beigetreten.',
    err_invalid_display_name: 'Bitte einen Namen mit 1 bis 60 Zeichen.',
    err_invalid_join_token: 'Der Link ist ungültig. Scanne den QR-Code erneut.',
    err_event_storage_full: 'Der Speicher dieses Fests ist voll. Sag den Veranstaltern Bescheid.',
    err_insufficient_storage: 'Der Server hat gerade keinen Platz mehr. Dein Foto bleibt hier und wird später gesendet.',
    gallery: 'Galerie',
    all_photos: 'Alle Fotos',
    my_photos: 'Meine Fotos',
    empty: 'Noch keine Fotos – mach das erste!',
    empty_mine: 'Du hast noch keine Fotos hochgeladen.',
    by: 'von {name}',
    processing: 'in Arbeit',
    hidden: 'ausgeblendet',
    failed: 'fehlerhaft',
    like: 'Gefällt mir',
    likes: '{n} ♥',
    comments: 'Kommentare',
    no_comments: 'Noch keine Kommentare.',
    comment_placeholder: 'Kommentar schreiben …',
    send: 'Senden',
    delete: 'Löschen',
    confirm_delete: 'Dieses Foto wirklich löschen?',
    cancel: 'Abbrechen',
    deleted: 'Foto gelöscht.',
    dismiss: 'Meldung schließen',
    err_invalid_comment: 'Ein Kommentar braucht 1 bis 1000 Zeichen.',
    close: 'Schließen',
    previous: 'Vorheriges',
    next: 'Nächstes',
    load_more: 'Mehr laden',
    organiser: 'Veranstalter',
    password: 'Passwort',
    login: 'Anmelden',
    err_invalid_credentials: 'Falsches Passwort.',
    err_too_many_attempts: 'Zu viele Versuche. Bitte in {s} s erneut.',
    err_forbidden: 'Das dürfen nur die Veranstalter.',
    join_link: 'Link für Gäste',
    qr_hint: 'Ausdrucken oder auf dem Bildschirm zeigen: Gäste scannen und laden hoch.',
    uploads_open: 'Uploads offen',
    quota_per_guest: 'Speicher pro Gast (MB)',
    save: 'Speichern',
    saved: 'Gespeichert.',
    download_all: 'Alle Fotos herunterladen (ZIP)',
    slideshow: 'Live-Diashow',
    slideshow_empty: 'Warte auf die ersten Fotos …',
    hide: 'Ausblenden',
    unhide: 'Einblenden',
    photos_count: '{n} Fotos',
    photos_count_one: '1 Foto',
    logout_hint: 'Angemeldet als Veranstalter.',
    logout: 'Abmelden',
    // ---- slideshow and dashboard (slideshow.js, organiser.js) ----
    slide_add_photos: 'Eure Fotos hinzufügen',
    slide_pause: 'Anhalten',
    slide_play: 'Weiter abspielen',
    copy_link: 'Link kopieren',
    link_copied: 'Link kopiert.',
    link_copy_by_hand: 'Der Link ist markiert – jetzt kopieren (Strg+C oder lange drücken).',
    print_card: 'Tischkarte drucken',
    card_scan: 'Scannen und eure Fotos teilen',
    quota_guests_see: 'Gäste sehen: {size} pro Gast.',
    download_visible: 'Sichtbare Fotos herunterladen (ZIP)',
    download_with_hidden: 'Mit den ausgeblendeten herunterladen (ZIP)',
    hidden_left_out: '{n} ausgeblendete Fotos fehlen im ersten Download.',
    hidden_left_out_one: '1 ausgeblendetes Foto fehlt im ersten Download.',
    hidden_left_out_at_least: 'Mindestens {n} ausgeblendete Fotos fehlen im ersten Download.',
    hidden_left_out_unknown: 'Ausgeblendete Fotos fehlen im ersten Download.',
  },
  en: {
    switch_to: 'Deutsch',
    tagline: 'Photos from the party, in one place.',
    need_link: 'Open the link from the event’s QR code to upload photos.',
    no_event: 'There is no such event (any more). Check the link.',
    your_name: 'Your name',
    join_hint: 'So everyone sees who took the photos. No account, no app.',
    join: 'Let’s go',
    hello: 'Hello, {name}!',
    choose_photos: 'Upload photos',
    choose_hint: 'Camera or library. Photos are kept on this device and sent as soon as the connection allows — even after a reload.',
    quota: '{used} of {total} used',
    quota_left: '{left} left',
    quota_photos: 'You can add about {n} more photos.',
    quota_photos_one: 'You can add about 1 more photo.',
    quota_almost_full: 'Almost full — maybe one more small photo fits.',
    quota_full: 'Your storage is full.',
    uploads_closed_button: 'Uploads are closed',
    uploads_closed_hint: 'The hosts have closed uploads for now. Photos already sent stay in the gallery.',
    waiting_connection: 'Waiting for the connection — your photos are safe on this phone and are sent by themselves.',
    waiting_server: 'The server is busy right now — your photos are safe on this phone and are sent by themselves.',
    offline_idle: 'No connection right now.',
    state_queued: 'Waiting',
    state_uploading: 'Uploading …',
    state_done: 'Uploaded',
    state_failed: 'Not sent yet',
    state_refused: 'Not accepted',
    already: 'Already uploaded',
    retry: 'Send now',
    remove: 'Remove',
    discard: 'Remove from the list',
    msg_queued: 'In the queue — goes after the photos before it.',
    msg_wait_connection: 'Waits for the connection.',
    msg_wait_network: 'No answer — tried again by itself in a moment.',
    msg_wait_server: 'The server is busy — tried again by itself in a moment.',
    next_try: 'Next try by itself in about {t}.',
    dur_s: '{n} s',
    dur_min: '{n} min',
    server_says: 'The server says: “{detail}”',
    summary_progress: '{sent} of {total} sent',
    summary_left_min: 'about {n} min left',
    summary_left_under_min: 'less than a minute left',
    summary_waiting: 'waiting for the connection',
    summary_all: 'All {n} photos sent',
    summary_all_one: 'Photo sent',
    summary_already: '{n} already there',
    summary_refused: '{n} not accepted',
    show_all: 'Show all ({n})',
    show_less: 'Show less',
    link_incomplete: 'This link is incomplete — scan the QR code again or ask the hosts for the full link.',
    err_network: 'The server could not be reached.',
    err_server: 'The server had a problem ({status}).',
    err_server_busy: 'The server turned it away several times.',
    err_refused: 'The server did not accept this photo.',
    err_quota_exceeded: 'Your storage is full: {left} of {total} left, this photo is {size}.',
    err_file_too_large: 'File too large: at most {max} per photo.',
    err_image_too_large: 'Image too large: {px} megapixels, at most {max}.',
    err_unsupported_media_type: 'Not a supported image (JPEG, PNG, WebP or GIF).',
    err_upload_deleted: 'This photo was deleted; it is not sent again.',
    err_client_upload_id_conflict: 'This photo clashed with another upload. Please choose it again.',
    err_client_upload_id_reused: 'This photo clashed with another upload. Please choose it again.',
    err_uploads_closed: 'Uploads are closed for this event.',
    err_event_storage_full: 'This event’s storage is full. Please tell the organisers.',
    err_insufficient_storage: 'The server is out of space for now. Your photo stays here and is sent later.',
    err_unauthenticated: 'Please enter your name again.',
    err_wrong_event: 'You joined another event.',
    err_invalid_display_name: 'Please use a name of 1 to 60 characters.',
    err_invalid_join_token: 'This link is not valid. Scan the QR code again.',
    gallery: 'Gallery',
    all_photos: 'All photos',
    my_photos: 'My photos',
    empty: 'No photos yet — take the first one!',
    empty_mine: 'You have not uploaded any photos yet.',
    by: 'by {name}',
    processing: 'processing',
    hidden: 'hidden',
    failed: 'broken',
    like: 'Like',
    likes: '{n} ♥',
    comments: 'Comments',
    no_comments: 'No comments yet.',
    comment_placeholder: 'Write a comment …',
    send: 'Send',
    delete: 'Delete',
    confirm_delete: 'Really delete this photo?',
    cancel: 'Cancel',
    deleted: 'Photo deleted.',
    dismiss: 'Dismiss message',
    err_invalid_comment: 'A comment needs 1 to 1000 characters.',
    close: 'Close',
    previous: 'Previous',
    next: 'Next',
    load_more: 'Load more',
    organiser: 'Organiser',
    password: 'Password',
    login: 'Log in',
    err_invalid_credentials: 'Wrong password.',
    err_too_many_attempts: 'Too many attempts. Try again in {s} s.',
    err_forbidden: 'Only the organisers may do that.',
    join_link: 'Link for guests',
    qr_hint: 'Print it or show it on a screen: guests scan it and upload.',
    uploads_open: 'Uploads open',
    quota_per_guest: 'Storage per guest (MB)',
    save: 'Save',
    saved: 'Saved.',
    download_all: 'Download all photos (ZIP)',
    slideshow: 'Live slideshow',
    slideshow_empty: 'Waiting for the first photos …',
    hide: 'Hide',
    unhide: 'Show',
    photos_count: '{n} photos',
    photos_count_one: '1 photo',
    logout_hint: 'Logged in as organiser.',
    logout: 'Log out',
    // ---- slideshow and dashboard (slideshow.js, organiser.js) ----
    slide_add_photos: 'Add your photos',
    slide_pause: 'Pause',
    slide_play: 'Play',
    copy_link: 'Copy link',
    link_copied: 'Link copied.',
    link_copy_by_hand: 'The link is selected – copy it now (Ctrl+C, or long-press).',
    print_card: 'Print a table card',
    card_scan: 'Scan to share your photos',
    quota_guests_see: 'Guests see: {size} each.',
    download_visible: 'Download the visible photos (ZIP)',
    download_with_hidden: 'Download with the hidden ones (ZIP)',
    hidden_left_out: '{n} hidden photos are left out of the first download.',
    hidden_left_out_one: '1 hidden photo is left out of the first download.',
    hidden_left_out_at_least: 'At least {n} hidden photos are left out of the first download.',
    hidden_left_out_unknown: 'Hidden photos are left out of the first download.',
  },
};

const STORE_KEY = 'confetti.lang';
let current = pick();
const listeners = new Set();

function pick() {
  try {
    const saved = localStorage.getItem(STORE_KEY);
    if (saved && STRINGS[saved]) return saved;
  } catch {
    // Storage may be unavailable (private mode); the browser's language decides then.
  }
  for (const tag of navigator.languages || [navigator.language || 'en']) {
    const base = String(tag).toLowerCase().split('-')[0];
    if (STRINGS[base]) return base;
  }
  return 'en';
}

export function lang() {
  return current;
}

/** The string for `key` in the current language, with `{name}` placeholders filled in. */
export function t(key, params = {}) {
  return tIn(current, key, params);
}

/** Switches the language, remembers it, and lets every view re-render its words. */
export function setLang(next) {
  if (!STRINGS[next] || next === current) return;
  current = next;
  try {
    localStorage.setItem(STORE_KEY, next);
  } catch {
    // Not remembered; still switched for this page.
  }
  applyStatic();
  for (const fn of listeners) fn(next);
}

export function toggleLang() {
  setLang(current === 'de' ? 'en' : 'de');
}

export function onLangChange(fn) {
  listeners.add(fn);
}

/** Fills every `[data-i18n]` element's text and every `[data-i18n-placeholder]` placeholder. */
export function applyStatic(root = document) {
  document.documentElement.lang = current;
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-placeholder]')) el.placeholder = t(el.dataset.i18nPlaceholder);
  for (const el of root.querySelectorAll('[data-i18n-label]')) el.setAttribute('aria-label', t(el.dataset.i18nLabel));
}

// The gallery's tiles while photos are processed, and the lightbox's download and swipe.
Object.assign(STRINGS.de, {
  photo: 'Foto',
  photo_processing: 'Das Foto wird noch vorbereitet …',
  download: 'Speichern',
});
Object.assign(STRINGS.en, {
  photo: 'Photo',
  photo_processing: 'This photo is still being prepared …',
  download: 'Save',
});

/** The string for `key` in a given language, whatever the page's (a table card speaks both). */
export function tIn(language, key, params = {}) {
  const s = STRINGS[language]?.[key] ?? STRINGS.en[key] ?? key;
  return s.replace(/\{(\w+)\}/g, (_, name) => (name in params ? String(params[name]) : `{${name}}`));
}

// The host modes: the review gate, the private gallery and the gallery that opens later
// (host-modes-view.js for guests, host-modes-card.js for the organiser).
Object.assign(STRINGS.de, {
  waiting_approval: 'Wartet auf die Freigabe der Gastgeber',
  badge_pending: 'in Prüfung',
  mode_review: 'Die Gastgeber sehen sich jedes Foto an, bevor die anderen es sehen.',
  mode_drop_box: 'Deine Fotos gehen an die Gastgeber; die Galerie ist privat.',
  mode_opens_at: 'Die Galerie öffnet am {when}. Bis dahin siehst du nur deine eigenen Fotos.',
  host_modes: 'Freigabe und Sichtbarkeit',
  review_uploads: 'Fotos erst nach Freigabe zeigen',
  review_hint: 'Ausschalten gibt nichts frei: Wartende Fotos bleiben, bis du sie freigibst.',
  gallery_guests_see: 'Gäste sehen',
  gallery_everyone: 'alle Fotos',
  gallery_own_uploads: 'nur ihre eigenen Fotos (Briefkasten)',
  opens_at_label: 'Galerie erst öffnen am',
  opens_at_hint: 'Bis dahin sehen Gäste nur ihre eigenen Fotos.',
  opens_at_none: 'Die Galerie ist offen.',
  opens_at_set: 'Öffnet am {when}.',
  open_now: 'Jetzt öffnen',
  pending_title: 'Wartend ({n})',
  pending_none: 'Kein Foto wartet auf Freigabe.',
  approve: 'Freigeben',
  approve_all: 'Alle freigeben',
  download_with_pending: 'Mit den wartenden herunterladen (ZIP)',
});
Object.assign(STRINGS.en, {
  waiting_approval: 'Waiting for the host’s approval',
  badge_pending: 'in review',
  mode_review: 'The hosts look at each photo before the others see it.',
  mode_drop_box: 'Your photos go to the hosts; the gallery is private.',
  mode_opens_at: 'The gallery opens on {when}. Until then you see only your own photos.',
  host_modes: 'Host modes',
  review_uploads: 'Approve photos before guests see them',
  review_hint: 'Switching this off approves nothing: waiting photos stay until you approve them.',
  gallery_guests_see: 'Guests see',
  gallery_everyone: 'all photos',
  gallery_own_uploads: 'only their own photos (drop box)',
  opens_at_label: 'Open the gallery only at',
  opens_at_hint: 'Until then guests see only their own photos.',
  opens_at_none: 'The gallery is open.',
  opens_at_set: 'Opens on {when}.',
  open_now: 'Open now',
  pending_title: 'Pending ({n})',
  pending_none: 'No photo is waiting for approval.',
  approve: 'Approve',
  approve_all: 'Approve all',
  download_with_pending: 'Download with the waiting ones (ZIP)',
});

/** A moment as the reader's language and time zone say it: "Sat 14 Jun, 22:00". */
export function formatWhen(iso) {
  const locale = current === 'de' ? 'de-DE' : 'en-GB';
  return new Intl.DateTimeFormat(locale, { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
}
