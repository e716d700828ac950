// The guest's gallery section: the heading, the "All photos" / "My photos" tabs, and the
// gallery itself (gallery.js), made once the guest has joined.

import { h } from './util.js';
import { t, onLangChange } from './i18n.js';
import { Gallery } from './gallery.js';

/** The bytes of an upload this page's queue still holds, by its client upload id or upload id. */
function queuedBlob(queue, u) {
  for (const item of queue.items.values()) {
    if ((u.client_upload_id && item.client_upload_id === u.client_upload_id) || (item.upload && item.upload.id === u.id)) return item.blob || null;
  }
  return null;
}

export class GalleryView {
  /** @param {HTMLElement} section where the view goes */
  constructor(section) {
    this.gallery = null;
    this.allTab = h('button', { type: 'button', role: 'tab', 'aria-selected': 'true', 'data-filter': 'all' });
    this.mineTab = h('button', { type: 'button', role: 'tab', 'aria-selected': 'false', 'data-filter': 'mine' });
    this.allTab.addEventListener('click', () => this.select(false));
    this.mineTab.addEventListener('click', () => this.select(true));
    this.root = h('div', {});
    section.append(h('h2', { 'data-i18n': 'gallery' }, t('gallery')), h('div', { class: 'tabs', role: 'tablist' }, this.allTab, this.mineTab), this.root);
    onLangChange(() => this.render());
    this.render();
  }

  render() {
    this.allTab.textContent = t('all_photos');
    this.mineTab.textContent = t('my_photos');
  }

  select(mine) {
    this.allTab.setAttribute('aria-selected', String(!mine));
    this.mineTab.setAttribute('aria-selected', String(mine));
    this.gallery?.setFilterMine(mine);
  }

  /**
   * Loads the gallery and follows it live; once only.
   * @param {ConstructorParameters<typeof Gallery>[0] & {queue?: import('./queue.js').UploadQueue}} options
   *   all but `root` (and `localBlob`, taken from `queue`: the guest's own photos are drawn from
   *   it until the server has their thumbnails)
   */
  start({ queue, onUpload, ...options }) {
    if (this.gallery) return;
    this.gallery = new Gallery({ ...options, root: this.root, localBlob: queue ? (u) => queuedBlob(queue, u) : undefined });
    this.gallery.loadMore();
    this.gallery.live(onUpload);
  }

  /** Reads the gallery afresh: what the guest may see has changed (it opened). */
  reload() {
    this.gallery?.reload();
  }

  /** A photo the guest just uploaded, shown before the live stream brings it. */
  upsert(upload) {
    this.gallery?.upsert(upload);
  }
}
