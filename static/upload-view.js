// The guest's upload view: the photo picker, the banners (uploads closed, offline), and one row
// per queued photo with its state, progress, what went wrong in words, a countdown to the next
// try, and the Retry and Remove buttons. The queue (queue.js) does the sending; this view shows
// it and passes the guest's choices on.

import { h, formatBytes } from './util.js';
import { t, lang, onLangChange } from './i18n.js';

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
    this.rows = new Map();
    this.list = h('ul', { class: 'queue', 'aria-live': 'polite' });
    this.closedBanner = h('p', { class: 'banner warn', hidden: event.uploads_open !== false });
    this.offlineBanner = h('p', { class: 'banner', hidden: true });

    const input = h('input', { type: 'file', multiple: true, accept: 'image/*', class: 'file-input', id: 'photos' });
    input.addEventListener('change', async () => {
      const files = Array.from(input.files || []);
      if (!files.length) return;
      try {
        await queue.add(files);
      } finally {
        // The same photos may be chosen again later (the queue recognises them).
        input.value = '';
      }
    });
    const pick = h('label', { class: 'pick button', for: 'photos' }, h('span', { class: 'pick-icon', 'aria-hidden': 'true' }, '+'), h('span', { 'data-i18n': 'choose_photos' }, t('choose_photos')));
    const hint = h('p', { class: 'hint', 'data-i18n': 'choose_hint' }, t('choose_hint'));
    section.append(this.closedBanner, this.offlineBanner, input, pick, hint, this.list);

    // Countdowns of photos waiting for their next try.
    setInterval(() => {
      for (const item of queue.items.values()) if (item.state === 'failed' && !item.final) this.render(item);
    }, 1000);
    window.addEventListener('online', () => this.renderAll());
    window.addEventListener('offline', () => this.renderAll());
    onLangChange(() => this.renderAll());
    this.renderAll();
  }

  /** The banners and every row, in the current language and connection state. */
  renderAll() {
    this.closedBanner.textContent = t('uploads_closed_banner');
    this.offlineBanner.hidden = navigator.onLine !== false;
    this.offlineBanner.textContent = t('offline');
    for (const item of this.queue.items.values()) this.render(item);
  }

  /** What the row says under the photo's name: why it was not sent, and when it is tried again. */
  message(item) {
    if (item.state === 'done') return item.already ? t('already') : '';
    if (item.state === 'queued' && navigator.onLine === false) return t('retry_online');
    if (item.state !== 'failed') return '';
    const p = item.problem || {};
    const code = item.last_error;
    const limits = this.info.limits || {};
    let text;
    switch (code) {
      case 'quota_exceeded':
        text = t('err_quota_exceeded', { left: formatBytes(p.remaining_bytes, lang()), total: formatBytes(p.quota_bytes, lang()), size: formatBytes(item.size, lang()) });
        break;
      case 'file_too_large':
        text = t('err_file_too_large', { max: formatBytes(p.limit_bytes ?? limits.max_upload_bytes, lang()) });
        break;
      case 'image_too_large':
        text = t('err_image_too_large', { px: Math.round((p.pixels ?? 0) / 1e6), max: Math.round((p.limit_pixels ?? limits.max_image_pixels ?? 0) / 1e6) });
        break;
      case 'network':
        text = t('err_network');
        break;
      default:
        if (code && code.startsWith('http_') && (p.status ?? 0) >= 500) text = t('err_server', { status: p.status });
        else if (code && t(`err_${code}`) !== `err_${code}`) text = t(`err_${code}`);
        else if (p.status >= 500) text = t('err_server', { status: p.status });
        else text = t('err_generic', { detail: p.detail || code });
    }
    if (!item.final) {
      const s = Math.max(0, Math.ceil((item.next_at - Date.now()) / 1000));
      text += ' ' + (navigator.onLine === false ? t('retry_online') : t('retry_in', { s }));
    }
    return text;
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
    v.li.dataset.clientUploadId = key;
    v.li.dataset.uploadState = item.state;
    v.li.dataset.final = item.final ? 'true' : 'false';
    if (item.last_error) v.li.dataset.error = item.last_error;
    else delete v.li.dataset.error;
    v.name.textContent = item.name;
    v.state.textContent = item.state === 'done' && item.already ? t('already') : t(`state_${item.state}`);
    v.bar.value = item.state === 'done' ? 1 : item.progress || 0;
    v.bar.hidden = item.state !== 'uploading';
    if (item.state === 'uploading' && !item.progress) v.bar.removeAttribute('value');
    const msg = item.state === 'done' ? '' : this.message(item);
    v.msg.textContent = msg;
    v.msg.hidden = !msg;
    v.retry.textContent = t('retry');
    v.retry.hidden = item.state !== 'failed';
    v.retry.disabled = item.state !== 'failed';
    // Only a photo the server refused for good may be dropped from the queue.
    v.discard.hidden = !(item.state === 'failed' && item.final);
    v.discard.setAttribute('aria-label', t('discard'));
    // A failed item that is not retried: the retry button is the only way on.
    v.li.classList.toggle('final', item.state === 'failed' && item.final);
  }

  row(item) {
    const key = item.client_upload_id;
    const preview = h('img', { class: 'q-thumb', alt: '' });
    if (item.blob) {
      preview.src = URL.createObjectURL(item.blob);
      preview.addEventListener('load', () => URL.revokeObjectURL(preview.src), { once: true });
    }
    const v = {
      li: h('li', { class: 'q-item' }),
      name: h('span', { class: 'q-name' }),
      state: h('span', { class: 'q-state' }),
      bar: h('progress', { class: 'q-progress', max: 1, value: 0 }),
      msg: h('p', { class: 'q-msg' }),
      retry: h('button', { type: 'button', class: 'q-retry', 'data-action': 'retry', onclick: () => this.queue.retry(key) }),
      discard: h('button', {
        type: 'button',
        class: 'q-discard',
        'data-action': 'discard',
        onclick: async () => {
          await this.queue.discard(key);
          this.rows.get(key)?.li.remove();
          this.rows.delete(key);
        },
      }, '✕'),
    };
    v.li.append(preview, h('div', { class: 'q-body' }, h('div', { class: 'q-line' }, v.name, v.state), v.bar, v.msg), h('div', { class: 'q-actions' }, v.retry, v.discard));
    return v;
  }
}
