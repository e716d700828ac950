// The guest's upload view: the photo picker (disabled, with the reason, while uploads are
// closed or the event's upload window has not opened yet or has ended), a calm banner while photos wait for the connection or the server, one summary line
// for the whole queue ("12 of 30 sent · about 4 min left") into which finished photos collapse,
// and one row per photo that needs to be seen: its state, progress, what it waits for, and —
// only when a tap can help — the "Send now" button (a temporary failure whose next automatic
// try is far off) or the Remove button (a refusal for good, with the server's own words); a
// photo not sent yet has a field for its caption (caption-field.js).
// The queue (queue.js) does the sending; this view shows it and passes the guest's choices on.

import { h, formatBytes, REVIEW } from './util.js';
import { t, lang, onLangChange } from './i18n.js';
import { PARALLEL, isVideoType } from './queue.js';
import { when } from './event-page.js';
import { CaptionField } from './caption-field.js';

// Collapsed, the list shows every photo that is being sent or needs the guest, and this many of
// the photos waiting their turn; the rest are counted in the summary line.
const QUEUED_SHOWN = 3;
/** What the file picker offers: every image, HEIC/HEIF by extension and type as well (some pickers do not count them as image/*), and videos as phones record them. */
const ACCEPT = 'image/*,.heic,.heif,image/heic,image/heif,video/mp4,video/quicktime,video/webm';

/** "about 4 min" / "45 s", for a wait or what is left. */
function duration(ms) {
  const s = Math.max(1, Math.round(ms / 1000));
  return s < 60 ? t('dur_s', { n: s }) : t('dur_min', { n: Math.round(s / 60) });
}

/** "All 9 photos and 1 video sent": the finished batch, photos and videos each by name. */
function sentLine(done) {
  const videos = done.filter((i) => i.video).length;
  const photos = done.length - videos;
  if (done.length === 1) return t(videos ? 'summary_all_one_video' : 'summary_all_one');
  const what = [photos && t(photos === 1 ? 'n_photos_one' : 'n_photos', { n: photos }), videos && t(videos === 1 ? 'n_videos_one' : 'n_videos', { n: videos })].filter(Boolean);
  return t(videos && photos ? 'summary_all_mixed' : 'summary_all_what', { what: what.join(t('and')) });
}

export class UploadView {
  /**
   * @param {object} o
   * @param {import('./queue.js').UploadQueue} o.queue
   * @param {object} o.info the server's limits, to name them in messages
   * @param {object} o.event the event (whether its uploads are open)
   * @param {HTMLElement} o.section where the view goes
   */
  constructor({ queue, info, event, section }) {
    this.queue = queue;
    this.info = info;
    this.open = event.uploads_open !== false;
    /** Why uploads are closed: `{kind: 'closed'}`, or the window's `{kind: 'not_yet' | 'ended', at}`. */
    this.why = this.open ? null : { kind: 'closed' };
    this.blocked = false;
    this.expanded = false;
    this.rows = new Map();
    this.list = h('ul', { class: 'queue collapsed', id: 'queue-list' });
    this.banner = h('p', { class: 'banner calm', role: 'status', 'data-testid': 'waiting', hidden: true });

    this.input = h('input', { type: 'file', multiple: true, accept: ACCEPT, class: 'file-input', id: 'photos' });
    this.input.addEventListener('change', async () => {
      const files = Array.from(this.input.files || []);
      if (!files.length) return;
      try {
        await queue.add(files);
      } finally {
        // The same photos may be chosen again later (the queue recognises them).
        this.input.value = '';
      }
    });
    this.pickText = h('span');
    this.pick = h('label', { class: 'pick button', for: 'photos', 'data-testid': 'pick' }, h('span', { class: 'pick-icon', 'aria-hidden': 'true' }, '+'), this.pickText);
    this.hint = h('p', { class: 'hint', id: 'pick-hint' });

    this.summaryText = h('span', { class: 'q-summary-text' });
    this.summaryBar = h('progress', { class: 'q-summary-bar', max: 1, value: 0 });
    this.toggle = h('button', { type: 'button', class: 'secondary small q-toggle', 'data-action': 'toggle-queue', 'aria-controls': 'queue-list', 'aria-expanded': 'false', onclick: () => this.setExpanded(!this.expanded) });
    this.summary = h('div', { class: 'q-summary', 'data-testid': 'queue-summary', 'aria-live': 'polite', hidden: true }, h('div', { class: 'q-summary-line' }, this.summaryText, this.toggle), this.summaryBar);
    section.append(this.input, this.pick, this.hint, this.banner, this.summary, this.list);

    // Waits that count down, and the time left, change without news from the queue.
    setInterval(() => {
      for (const item of queue.items.values()) if (item.state === 'failed' && !item.final) this.render(item);
      this.renderSummary();
    }, 1000);
    window.addEventListener('online', () => this.renderAll());
    window.addEventListener('offline', () => this.renderAll());
    onLangChange(() => this.renderAll());
    this.renderAll();
  }

  /** Uploads opened or closed (as the event says, or as a refusal told), and why they are closed. */
  setOpen(open, why = open ? null : { kind: 'closed' }) {
    if (this.open === open && this.why?.kind === why?.kind && this.why?.at === why?.at) return;
    this.open = open;
    this.why = open ? null : why;
    this.renderPicker();
  }

  setExpanded(expanded) {
    this.expanded = expanded;
    this.list.classList.toggle('collapsed', !expanded);
    this.renderSummary();
  }

  /** The hosts stopped this guest's uploads (as `GET /me` or a refusal told): for good. */
  setBlocked(blocked) {
    if (this.blocked === blocked) return;
    this.blocked = blocked;
    this.renderPicker();
  }

  renderPicker() {
    const usable = this.open && !this.blocked;
    this.input.disabled = !usable;
    this.pick.classList.toggle('disabled', !usable);
    if (usable) this.pick.removeAttribute('aria-disabled');
    else this.pick.setAttribute('aria-disabled', 'true');
    const kind = this.open ? '' : this.why?.kind || 'closed';
    this.pick.dataset.closed = kind;
    if (this.blocked) {
      this.pickText.textContent = t('guest_blocked_button');
      this.hint.textContent = t('guest_blocked_hint');
    } else if (kind === 'not_yet') {
      this.pickText.textContent = t('uploads_not_yet_button', { when: when(this.why.at) });
      this.hint.textContent = t('uploads_not_yet_hint');
    } else if (kind === 'ended') {
      this.pickText.textContent = t('uploads_ended_button');
      this.hint.textContent = t('uploads_ended_hint', { when: when(this.why.at) });
    } else {
      this.pickText.textContent = this.open ? t('choose_photos') : t('uploads_closed_button');
      this.hint.textContent = this.open ? t('choose_hint') : t('uploads_closed_hint');
    }
    this.hint.classList.toggle('closed-reason', !this.open && !this.blocked);
    this.hint.classList.toggle('blocked-reason', Boolean(this.blocked));
  }

  /** The picker, the banner, the summary and every row, in the current language and connection state. */
  renderAll() {
    this.renderPicker();
    for (const item of this.queue.items.values()) this.render(item);
    this.renderSummary();
  }

  /** Why photos wait, once for all of them: offline, no answer, or the server busy. */
  renderBanner(pending) {
    const offline = navigator.onLine === false;
    let text = '';
    if (offline) text = pending ? t('waiting_connection') : t('offline_idle');
    else if (pending && this.queue.trouble === 'network') text = t('waiting_connection');
    else if (pending && this.queue.trouble === 'server') text = t('waiting_server');
    this.banner.textContent = text;
    this.banner.hidden = !text;
    this.banner.dataset.reason = offline ? 'offline' : this.queue.trouble || '';
    return Boolean(text);
  }

  /** The one line for the whole queue, and which rows the collapsed list hides. */
  renderSummary() {
    clearTimeout(this.summaryTimer);
    this.summaryTimer = null;
    const items = [...this.queue.items.values()];
    const pending = items.filter((i) => i.state === 'queued' || i.state === 'uploading' || (i.state === 'failed' && !i.final));
    const waiting = this.renderBanner(pending.length);
    // Done: those listed, and those of the same batches sent before a reload (no longer listed).
    const done = [
      ...items.filter((i) => i.state === 'done').map((i) => ({ video: isVideoType(i.type), size: i.size, already: Boolean(i.already) })),
      ...this.queue.batchDone(),
    ];
    const refused = items.filter((i) => i.state === 'failed' && i.final);
    const already = done.filter((i) => i.already).length;
    const total = done.length + pending.length;
    this.summary.hidden = items.length === 0;
    this.summary.dataset.sent = String(done.length);
    this.summary.dataset.total = String(total);
    const parts = [];
    if (pending.length) {
      parts.push(t('summary_progress', { sent: done.length, total }));
      const rate = this.queue.rate();
      const left = pending.reduce((s, i) => s + i.size * (1 - (i.state === 'uploading' ? i.progress || 0 : 0)), 0);
      if (waiting) parts.push(t('summary_waiting'));
      else if (rate) parts.push(left / rate < 60 ? t('summary_left_under_min') : t('summary_left_min', { n: Math.round(left / rate / 60) }));
      this.summary.dataset.etaS = rate && !waiting ? String(Math.round(left / rate)) : '';
    } else if (total) {
      parts.push(sentLine(done));
      this.summary.dataset.etaS = '';
    }
    if (already) parts.push(t('summary_already', { n: already }));
    if (refused.length) parts.push(t('summary_refused', { n: refused.length }));
    this.summaryText.textContent = parts.join(' · ');
    const bytes = done.reduce((s, i) => s + (i.size || 0), 0) + pending.reduce((s, i) => s + i.size * (i.state === 'uploading' ? i.progress || 0 : 0), 0);
    const all = done.reduce((s, i) => s + (i.size || 0), 0) + pending.reduce((s, i) => s + i.size, 0);
    this.summaryBar.value = all > 0 ? bytes / all : 0;
    this.summaryBar.hidden = !pending.length;

    // Collapsed: finished photos go into the line; of those waiting their turn, the next few show.
    const nextUp = new Set(
      items
        .filter((i) => i.state === 'queued')
        .sort((a, b) => a.created_at - b.created_at)
        .slice(0, QUEUED_SHOWN)
        .map((i) => i.client_upload_id),
    );
    let hidden = 0;
    for (const item of items) {
      const v = this.rows.get(item.client_upload_id);
      if (!v) continue;
      const fold = item.state === 'done' || (item.state === 'queued' && !nextUp.has(item.client_upload_id));
      v.li.classList.toggle('foldable', fold);
      if (fold) hidden += 1;
    }
    this.toggle.hidden = hidden === 0 && !this.expanded;
    this.toggle.setAttribute('aria-expanded', String(this.expanded));
    this.toggle.textContent = this.expanded ? t('show_less') : t('show_all', { n: items.length });
  }

  /** Coalesces the summary's updates (progress events come many a second). */
  summaryLater() {
    if (!this.summaryTimer) this.summaryTimer = setTimeout(() => this.renderSummary(), 100);
  }

  /** Why a photo was refused for good, in the guest's language, naming the limit. */
  refusal(item) {
    const p = item.problem || {};
    const code = item.last_error;
    const limits = this.info.limits || {};
    switch (code) {
      case 'quota_exceeded':
        return t('err_quota_exceeded', { left: formatBytes(p.remaining_bytes, lang()), total: formatBytes(p.quota_bytes, lang()), size: formatBytes(item.size, lang()) });
      case 'file_too_large':
        return t('err_file_too_large', { max: formatBytes(p.limit_bytes ?? limits.max_upload_bytes, lang()) });
      case 'video_too_long':
        return t('err_video_too_long', { s: p.duration_s ?? '?', max: p.limit_seconds ?? limits.max_video_seconds ?? '?' });
      case 'image_too_large':
        return t('err_image_too_large', { px: Math.round((p.pixels ?? 0) / 1e6), max: Math.round((p.limit_pixels ?? limits.max_image_pixels ?? 0) / 1e6) });
      case 'event_storage_full':
        return t('err_event_storage_full');
      case 'unsupported_media_type':
        // The server names the format it found and what it takes (its words follow in the
        // detail line); the page's own list is only for a refusal without them.
        return t(p.detail ? 'err_unsupported_media_type_detail' : 'err_unsupported_media_type');
      default:
        if (code && t(`err_${code}`) !== `err_${code}`) return t(`err_${code}`);
        return t('err_refused');
    }
  }

  /** What a waiting or stuck photo waits for, without a countdown that could lie. */
  waitingFor(item) {
    const now = Date.now();
    if (navigator.onLine === false) return t('msg_wait_connection');
    // Its turn has come (or it never failed): it goes when one of the slots is free.
    if (!item.last_error || item.next_at <= now) return this.queue.active >= PARALLEL ? t('msg_queued') : '';
    if (item.last_error === 'network') return t('msg_wait_network');
    if (item.last_error === 'insufficient_storage') return t('err_insufficient_storage');
    return t('msg_wait_server');
  }

  /** What the row says under the photo's name. */
  message(item) {
    // Picked again: the server has these bytes from this guest already; nothing was sent.
    if (item.state === 'done' && item.recognised) return t('recognised');
    if (item.state === 'done' && item.upload?.review === REVIEW.PENDING) return t('waiting_approval');
    if (item.state === 'done') return item.already ? t('already') : '';
    if (item.state === 'uploading') return '';
    // Being hashed, or asking the server whether it has these bytes, before any is sent.
    if (item.state === 'queued' && item.check && navigator.onLine !== false) return t('msg_checking');
    if (item.state === 'queued') return this.waitingFor(item);
    if (item.final) return this.refusal(item);
    // Stuck: tried several times, the next automatic try is far off; "Send now" may help.
    const reason = item.last_error === 'network' ? t('err_network') : t('err_server_busy');
    const left = item.next_at - Date.now();
    if (left <= 0) return `${reason} ${this.queue.active >= PARALLEL ? t('msg_queued') : ''}`.trim();
    return `${reason} ${t('next_try', { t: duration(left) })}`;
  }

  /** The row of one queued photo, made on first sight and kept up to date. */
  render(item) {
    const key = item.client_upload_id;
    let v = this.rows.get(key);
    if (!v) {
      v = this.row(item);
      this.rows.set(key, v);
      this.list.prepend(v.li);
    }
    const final = item.state === 'failed' && item.final;
    v.li.dataset.clientUploadId = key;
    v.li.dataset.uploadState = item.state;
    v.li.dataset.final = item.final ? 'true' : 'false';
    if (item.upload?.review) v.li.dataset.review = item.upload.review;
    if (item.recognised) v.li.dataset.recognised = 'true';
    if (item.last_error) v.li.dataset.error = item.last_error;
    else delete v.li.dataset.error;
    // Waiting for the server's answer whether it has these bytes already (re-picks).
    if (item.check) v.li.dataset.check = item.check;
    else delete v.li.dataset.check;
    v.name.textContent = item.name;
    let state = t(`state_${item.state}`);
    if (item.state === 'done' && item.already) state = t('already');
    else if (final) state = t('state_refused');
    v.state.textContent = state;
    v.bar.value = item.state === 'done' ? 1 : item.progress || 0;
    v.bar.hidden = item.state !== 'uploading';
    if (item.state === 'uploading' && !item.progress) v.bar.removeAttribute('value');
    const msg = this.message(item);
    v.msg.textContent = msg;
    v.msg.hidden = !msg;
    // The server's own words for a refusal (they name the limit or the format).
    const detail = final && item.problem?.detail ? t('server_says', { detail: item.problem.detail }) : '';
    v.detail.textContent = detail;
    v.detail.hidden = !detail;
    v.caption.render(item);
    // "Send now" only where a tap may help: temporary, and the next automatic try far off.
    v.retry.textContent = t('retry');
    v.retry.hidden = !(item.state === 'failed' && !item.final);
    v.retry.disabled = v.retry.hidden;
    // A refusal for good is not sent again; the guest may take it off the list.
    v.remove.hidden = !final;
    v.remove.textContent = t('remove');
    v.remove.title = t('discard');
    v.li.classList.toggle('final', final);
    v.li.classList.toggle('stuck', item.state === 'failed' && !item.final);
    this.summaryLater();
  }

  row(item) {
    const key = item.client_upload_id;
    const placeholder = () => h('div', { class: 'q-thumb q-placeholder', 'aria-hidden': 'true' }, h('span', {}, item.name));
    let preview = placeholder();
    // The local preview when this browser can draw the file; else the placeholder stays.
    if (item.blob && (!item.type || item.type.startsWith('image/'))) {
      const img = h('img', { class: 'q-thumb', alt: '', hidden: true });
      const url = URL.createObjectURL(item.blob);
      img.addEventListener('load', () => {
        URL.revokeObjectURL(url);
        img.hidden = false;
        preview.replaceWith(img);
        preview = img;
      }, { once: true });
      img.addEventListener('error', () => URL.revokeObjectURL(url), { once: true });
      img.src = url;
    }
    const v = {
      li: h('li', { class: 'q-item' }),
      name: h('span', { class: 'q-name' }),
      state: h('span', { class: 'q-state' }),
      bar: h('progress', { class: 'q-progress', max: 1, value: 0 }),
      msg: h('p', { class: 'q-msg' }),
      detail: h('p', { class: 'q-detail', lang: 'en' }),
      caption: new CaptionField(this.queue, key),
      retry: h('button', { type: 'button', class: 'q-retry small', 'data-action': 'retry', onclick: () => this.queue.retry(key) }),
      remove: h('button', {
        type: 'button',
        class: 'q-remove secondary small',
        'data-action': 'remove',
        onclick: async () => {
          await this.queue.discard(key);
          this.rows.get(key)?.li.remove();
          this.rows.delete(key);
          this.renderSummary();
        },
      }),
    };
    v.li.append(preview, h('div', { class: 'q-body' }, h('div', { class: 'q-line' }, v.name, v.state), v.bar, v.msg, v.caption.el, v.detail, h('div', { class: 'q-actions' }, v.retry, v.remove)));
    return v;
  }
}
