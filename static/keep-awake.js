// "Keep the screen on while sending": an opt-in switch (Screen Wake Lock) shown on a phone
// while photos are being sent, so a long queue is not cut off by the screen locking. Only where
// the browser has the Wake Lock API (a secure context) and the device is a touch phone; the
// choice is remembered on this device. The lock is held while something is left to send and the
// page is in view (the browser drops it when the page is hidden; it is taken again on return).

import { h, remember, remembered } from './util.js';
import { t, onLangChange } from './i18n.js';

const KEY = 'confetti.keep_awake';

/** Whether the switch can be offered here. */
export function keepAwakePossible() {
  return Boolean(globalThis.isSecureContext && navigator.wakeLock && matchMedia('(pointer: coarse)').matches);
}

export class KeepAwake {
  /** @param {{section: HTMLElement, queue: {pending(): object[]}}} o */
  constructor({ section, queue }) {
    this.queue = queue;
    this.lock = null;
    this.asking = false;
    this.box = h('input', { type: 'checkbox', class: 'switch', id: 'keep-awake', 'data-testid': 'keep-awake' });
    this.box.checked = remembered(KEY) === 'on';
    this.label = h('label', { for: 'keep-awake' });
    this.el = h('div', { class: 'row switch-row keep-awake', hidden: true }, this.box, this.label);
    section.append(this.el);
    this.box.addEventListener('change', () => {
      remember(KEY, this.box.checked ? 'on' : 'off');
      this.update();
    });
    document.addEventListener('visibilitychange', () => this.update());
    onLangChange(() => this.words());
    this.words();
  }

  words() {
    this.label.textContent = t('keep_awake');
  }

  /** The queue changed: shown while something is left to send; the lock taken or let go. */
  async update() {
    const sending = this.queue.pending().length > 0;
    this.el.hidden = !sending;
    const want = sending && this.box.checked && document.visibilityState === 'visible';
    if (!want) {
      const lock = this.lock;
      this.lock = null;
      await lock?.release().catch(() => {});
      return;
    }
    if (this.lock || this.asking) return;
    this.asking = true;
    try {
      this.lock = await navigator.wakeLock.request('screen');
      this.lock.addEventListener('release', () => {
        this.lock = null;
        this.el.dataset.held = 'false';
      });
      this.el.dataset.held = 'true';
    } catch (e) {
      // Refused (battery saver, or the page went away meanwhile): the switch stays, the screen may lock.
      console.warn('the screen could not be kept on', e);
    } finally {
      this.asking = false;
    }
  }
}
