// The organiser's live slideshow: full screen, one photo at a time, a photo that just arrived
// first, then round again through every ready one. A click, Escape or leaving full screen ends it.

import { h, previewUrl, STATUS } from './util.js';
import { t } from './i18n.js';

/** Full screen, one photo at a time, the newest arrivals first, then round again. */
export class Slideshow {
  /** @param {() => import('./gallery.js').Gallery | null} gallery the photos to show, once loaded */
  constructor(gallery) {
    this.gallery = gallery;
    this.el = h('div', { class: 'slideshow', hidden: true, 'data-testid': 'slideshow' });
    this.img = h('img', { alt: '' });
    this.caption = h('p', { class: 'slide-caption' });
    this.empty = h('p', { class: 'slide-empty' });
    this.el.append(this.img, this.caption, this.empty);
    this.el.addEventListener('click', () => this.stop());
    document.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && !this.el.hidden) this.stop();
    });
    document.addEventListener('fullscreenchange', () => {
      if (!document.fullscreenElement && !this.el.hidden) this.stop();
    });
    document.body.append(this.el);
    this.fresh = [];
    this.index = 0;
    this.timer = null;
  }

  ready() {
    const g = this.gallery();
    return g ? g.order.map((id) => g.uploads.get(id)).filter((u) => u && u.status === STATUS.READY && previewUrl(u)) : [];
  }

  start() {
    this.el.hidden = false;
    this.index = 0;
    this.el.requestFullscreen?.().catch(() => {});
    this.next();
  }

  stop() {
    clearTimeout(this.timer);
    this.el.hidden = true;
    if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
  }

  /** A photo that just became ready jumps the line. */
  arrived(u) {
    if (this.el.hidden) return;
    this.fresh.push(u);
    if (this.fresh.length === 1) this.next();
  }

  next() {
    clearTimeout(this.timer);
    if (this.el.hidden) return;
    const g = this.gallery();
    let u = this.fresh.shift();
    // Hidden or deleted since it arrived: skip it.
    while (u && g?.uploads.get(u.id)?.status !== STATUS.READY) u = this.fresh.shift();
    if (!u) {
      const all = this.ready();
      if (all.length) {
        u = all[this.index % all.length];
        this.index += 1;
      }
    }
    this.empty.textContent = u ? '' : t('slideshow_empty');
    this.empty.hidden = Boolean(u);
    if (u) {
      this.img.src = previewUrl(u);
      this.img.dataset.uploadId = u.id;
      this.caption.textContent = [u.guest?.display_name, u.caption].filter(Boolean).join(' · ');
    }
    this.timer = setTimeout(() => this.next(), 6000);
  }
}
