// A waiting photo's caption, written in its row of the upload queue: optional (a guest who writes
// nothing taps nothing more), kept with the queue item in IndexedDB as it is typed (a reload keeps
// it) and sent with the photo. While the field has the focus the photo waits its turn; once the
// photo has started sending, the caption is fixed and shown as text.

import { h } from './util.js';
import { t } from './i18n.js';

/** The server's limit (docs/api.md: a caption is at most 500 characters). `maxlength` counts UTF-16 units, never more than the server's characters. */
export const CAPTION_MAX = 500;
/** How long typing pauses before the caption is written to IndexedDB. */
const SAVE_AFTER_MS = 300;

export class CaptionField {
  /**
   * @param {import('./queue.js').UploadQueue} queue
   * @param {string} key the item's client upload id
   */
  constructor(queue, key) {
    this.queue = queue;
    this.key = key;
    this.timer = null;
    this.input = h('input', {
      type: 'text',
      class: 'q-caption',
      name: 'caption',
      maxlength: CAPTION_MAX,
      autocomplete: 'off',
      enterkeyhint: 'done',
      'data-testid': 'caption',
    });
    this.shown = h('p', { class: 'q-caption-text', 'data-testid': 'caption-text', hidden: true });
    this.el = h('div', { class: 'q-caption-wrap' }, this.input, this.shown);
    this.input.addEventListener('focus', () => queue.hold(key, true));
    this.input.addEventListener('input', () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.save(), SAVE_AFTER_MS);
    });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        this.input.blur();
      }
    });
    this.input.addEventListener('blur', async () => {
      clearTimeout(this.timer);
      await this.save();
      queue.hold(key, false);
    });
  }

  save() {
    return this.queue.setCaption(this.key, this.input.value);
  }

  /** Editable while the photo has not been sent; then the caption (if any) as text. */
  render(item) {
    const editable = this.queue.captionEditable(item);
    this.input.hidden = !editable;
    this.input.disabled = !editable;
    if (document.activeElement !== this.input) this.input.value = item.caption || '';
    this.input.placeholder = t('caption_placeholder');
    this.input.setAttribute('aria-label', t('caption_label', { name: item.name }));
    this.shown.textContent = item.caption || '';
    this.shown.hidden = editable || !item.caption;
  }
}
