// The guest's greeting and storage, as a guest thinks of it: "Hello, Marie!" and "You can add
// about 200 more photos" — what is left divided by a typical photo (the guest's own average
// once they have uploaded, else a phone camera's ~4 MB). The exact figure ("12 MB of 1 GB
// used · 988 MB left") stays below it, smaller.

import { h, formatBytes } from './util.js';
import { t, lang, onLangChange } from './i18n.js';

/** A phone camera's JPEG, for a guest who has not uploaded anything yet. */
export const TYPICAL_PHOTO_BYTES = 4 * 1024 * 1024;

/** "about 200", not "about 197": the count is an estimate, and says so by its roundness. */
function roughly(n) {
  if (n >= 1000) return Math.round(n / 100) * 100;
  if (n >= 100) return Math.round(n / 10) * 10;
  return n;
}

export class QuotaView {
  /** @param {HTMLElement} section where the view goes */
  constructor(section) {
    this.me = null;
    this.hello = h('h2', { class: 'hello' });
    this.photos = h('span', { class: 'quota-photos' });
    this.exact = h('span', { class: 'quota-exact' });
    this.bar = h('progress', { class: 'quota-bar', max: 1, value: 0 });
    this.text = h('div', { class: 'quota-text', 'data-testid': 'quota' }, this.photos, this.exact);
    section.append(this.hello, h('div', { class: 'quota' }, this.bar, this.text));
    onLangChange(() => this.render(this.me));
  }

  /** Shows the guest as `GET /me` describes them (nothing before that is known). */
  render(me) {
    this.me = me;
    if (!me) return;
    const left = Math.max(0, me.quota_bytes - me.used_bytes);
    const typical = me.upload_count > 0 && me.used_bytes > 0 ? me.used_bytes / me.upload_count : TYPICAL_PHOTO_BYTES;
    const n = roughly(Math.floor(left / typical));
    let photos;
    if (left <= 0) photos = t('quota_full');
    else if (n === 0) photos = t('quota_almost_full');
    else if (n === 1) photos = t('quota_photos_one');
    else photos = t('quota_photos', { n: n.toLocaleString(lang()) });
    this.photos.textContent = photos;
    this.exact.textContent = `${t('quota', { used: formatBytes(me.used_bytes, lang()), total: formatBytes(me.quota_bytes, lang()) })} · ${t('quota_left', { left: formatBytes(left, lang()) })}`;
    this.text.dataset.usedBytes = String(me.used_bytes);
    this.text.dataset.quotaBytes = String(me.quota_bytes);
    this.text.dataset.photosLeft = String(n);
    this.bar.value = me.quota_bytes > 0 ? Math.min(1, me.used_bytes / me.quota_bytes) : 1;
    this.hello.textContent = t('hello', { name: me.display_name });
  }
}
