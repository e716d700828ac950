// The guest's greeting and storage: "Hello, Marie!", how much of the quota is used and left.

import { h, formatBytes } from './util.js';
import { t, lang, onLangChange } from './i18n.js';

export class QuotaView {
  /** @param {HTMLElement} section where the view goes */
  constructor(section) {
    this.me = null;
    this.hello = h('p', { class: 'hello' });
    this.text = h('span', { class: 'quota-text', 'data-testid': 'quota' });
    this.bar = h('progress', { class: 'quota-bar', max: 1, value: 0 });
    section.append(this.hello, h('div', { class: 'quota' }, this.bar, this.text));
    onLangChange(() => this.render(this.me));
  }

  /** Shows the guest as `GET /me` describes them (nothing before that is known). */
  render(me) {
    this.me = me;
    if (!me) return;
    const left = Math.max(0, me.quota_bytes - me.used_bytes);
    this.text.textContent = `${t('quota', { used: formatBytes(me.used_bytes, lang()), total: formatBytes(me.quota_bytes, lang()) })} · ${t('quota_left', { left: formatBytes(left, lang()) })}`;
    this.text.dataset.usedBytes = String(me.used_bytes);
    this.text.dataset.quotaBytes = String(me.quota_bytes);
    this.bar.value = me.quota_bytes > 0 ? Math.min(1, me.used_bytes / me.quota_bytes) : 1;
    this.hello.textContent = t('hello', { name: me.display_name });
  }
}
