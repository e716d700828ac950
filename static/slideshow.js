// The organiser's live slideshow, made for a screen at the venue: full screen, one photo at a
// time with a cross-fade, the event's name, a corner QR code that invites guests to add theirs,
// each photo's caption and uploader. Photos that arrive while it runs are queued in arrival order
// (first in, first out) and shown before the loop through every ready photo (in the order they
// were taken) goes on. Pause/play,
// previous/next by buttons or keyboard (space, arrows); the controls fade while nobody touches
// anything. Escape, the close button or leaving full screen ends it. A video plays muted to its end
// (its poster while it loads), then the show goes on. On a venue screen (`screen`, screen.js) it
// is the whole page: nothing ends it there, and it has no close button. Approved guestbook
// messages show between the photos (slide-words.js).

import { h, previewUrl, isVideo, capturedAt, STATUS, REVIEW } from './util.js';
import { t, onLangChange } from './i18n.js';
import { SlideWords } from './slide-words.js';

const SLIDE_MS = 6000;
const IDLE_MS = 2500;
/** How many shown ids `data-shown` and the back history keep. */
const HISTORY = 100;

export class Slideshow {
  /**
   * @param {object} o
   * @param {() => import('./gallery.js').Gallery | null} o.gallery the photos to show, once loaded
   * @param {() => {name?: string}} o.event the event as last read (its name is shown)
   * @param {string} o.slug the event's slug (for its join QR code)
   * @param {boolean} [o.screen] the venue screen's page: the show is all there is
   */
  constructor({ gallery, event, slug, screen = false }) {
    this.screen = screen;
    this.gallery = gallery;
    this.event = event;
    this.slug = slug;
    // The current photo is the first <img>; the outgoing one fades out beneath it.
    this.img = h('img', { class: 'slide slide-current', alt: '' });
    this.leaving = h('img', { class: 'slide slide-leaving', alt: '', 'aria-hidden': 'true' });
    // A video in place of the photo: muted (a browser plays nothing else by itself), to its end.
    this.video = h('video', { class: 'slide slide-video', muted: true, playsinline: true, preload: 'auto', hidden: true, 'data-testid': 'slide-video' });
    this.video.muted = true;
    this.video.addEventListener('ended', () => {
      if (this.running && !this.paused && isVideo(this.current)) this.next();
    });
    // One that cannot play stays on screen (its poster) for a photo's time.
    this.video.addEventListener('error', () => {
      if (!this.running || this.paused || !isVideo(this.current)) return;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.next(), SLIDE_MS);
    });
    this.title = h('h2', { class: 'slide-event', 'data-testid': 'slide-event' });
    this.qr = h('img', { class: 'slide-qr-img', alt: '', width: 160, height: 160, 'data-testid': 'slide-qr' });
    this.qrLabel = h('p', { class: 'slide-qr-label' });
    this.text = h('p', { class: 'slide-text', 'data-testid': 'slide-caption' });
    this.by = h('p', { class: 'slide-by', 'data-testid': 'slide-by' });
    this.empty = h('p', { class: 'slide-empty' });
    this.prevButton = h('button', { type: 'button', class: 'slide-button', 'data-action': 'slide-prev' }, '‹');
    this.playButton = h('button', { type: 'button', class: 'slide-button slide-play', 'data-action': 'slide-play' });
    this.nextButton = h('button', { type: 'button', class: 'slide-button', 'data-action': 'slide-next' }, '›');
    this.closeButton = h('button', { type: 'button', class: 'slide-button slide-close', 'data-action': 'slide-close', hidden: screen }, '✕');
    this.el = h(
      'div',
      // A landmark of its own: it stands outside the page's main content, over it.
      { class: 'slideshow', hidden: true, role: 'region', 'data-testid': 'slideshow', 'data-state': 'playing', 'data-shown': '' },
      this.img,
      this.leaving,
      this.video,
      h('div', { class: 'slide-top' }, this.title),
      h('div', { class: 'slide-qr' }, this.qr, this.qrLabel),
      h('div', { class: 'slide-caption' }, this.text, this.by),
      this.empty,
      h('div', { class: 'slide-controls' }, this.prevButton, this.playButton, this.nextButton, this.closeButton),
    );
    // The new photo fades in once it has loaded, over the old one fading out.
    this.img.addEventListener('load', () => this.fadeIn());
    this.img.addEventListener('error', () => this.fadeIn());
    this.prevButton.addEventListener('click', () => this.previous());
    this.nextButton.addEventListener('click', () => this.next());
    this.playButton.addEventListener('click', () => this.toggle());
    this.closeButton.addEventListener('click', () => this.stop());
    for (const type of ['pointermove', 'pointerdown', 'touchstart']) this.el.addEventListener(type, () => this.wake(), { passive: true });
    document.addEventListener('keydown', (e) => this.key(e));
    document.addEventListener('fullscreenchange', () => {
      if (!document.fullscreenElement && !this.el.hidden && !this.screen) this.stop();
    });
    onLangChange(() => this.renderWords());
    // The guestbook's approved messages, between the photos (slide-words.js).
    this.words = new SlideWords(slug);
    this.el.append(this.words.el);
    document.body.append(this.el);

    /** New arrivals not shown yet, oldest first. */
    this.fresh = [];
    /** Ids shown, oldest first, and where in that list the screen is (for previous/next). */
    this.history = [];
    this.pos = -1;
    this.index = 0;
    this.timer = null;
    this.idleTimer = null;
    this.paused = false;
    this.renderWords();
  }

  get running() {
    return !this.el.hidden;
  }

  /** The loop: every photo the room may see, in the order they were taken (oldest first). */
  ready() {
    const g = this.gallery();
    if (!g) return [];
    const ready = g.order.map((id) => g.uploads.get(id)).filter((u) => showable(u));
    return ready.sort((a, b) => compare(capturedAt(a), capturedAt(b)) || compare(a.created_at, b.created_at) || compare(a.id, b.id));
  }

  start() {
    this.el.hidden = false;
    this.index = 0;
    this.fresh = [];
    this.history = [];
    this.pos = -1;
    this.el.dataset.shown = '';
    this.paused = false;
    this.title.textContent = this.event()?.name || '';
    // For the organiser and the event's screen: the cookie goes with the <img>.
    this.qr.src = `/e/${encodeURIComponent(this.slug)}/qr.svg`;
    this.renderWords();
    // A screen goes full screen by its own button (a browser wants a tap for it).
    if (!this.screen) this.el.requestFullscreen?.().catch(() => {});
    this.wake();
    this.words.load().then(() => this.words.follow(this.gallery()?.source));
    this.next();
  }

  stop() {
    clearTimeout(this.timer);
    clearTimeout(this.idleTimer);
    this.video.pause();
    this.el.hidden = true;
    if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
  }

  /** A photo that just became ready waits its turn behind earlier arrivals, never lost. */
  arrived(u) {
    if (!this.running || this.fresh.some((x) => x.id === u.id)) return;
    this.fresh.push(u);
    // A photo from the loop gives way at once; an earlier arrival keeps its full time.
    if (!this.paused && this.fresh.length === 1 && !this.showingFresh) this.next();
  }

  toggle() {
    this.paused = !this.paused;
    this.renderWords();
    this.schedule();
  }

  /** The next photo: the oldest arrival not shown yet, else forward in history, else the loop. */
  next() {
    if (!this.running) return;
    const g = this.gallery();
    // Between photos (never before a photo that just arrived): a message from the guestbook.
    this.words.follow(g?.source);
    const words = this.fresh.length || this.pos < this.history.length - 1 ? null : this.words.take(this.ready().length === 0);
    if (words) return this.showWords(words);
    let u = null;
    let fresh = false;
    while (this.fresh.length && !u) {
      const candidate = this.fresh.shift();
      // Hidden or deleted since it arrived: skip it.
      const now = g?.uploads.get(candidate.id) ?? candidate;
      if (showable(now)) {
        u = now;
        fresh = true;
      }
    }
    if (!u && this.pos < this.history.length - 1) {
      this.pos += 1;
      u = this.lookup(this.history[this.pos]);
      if (!u) return this.next();
      this.show(u, false);
      return;
    }
    if (!u) {
      const all = this.ready();
      if (all.length) {
        u = all[this.index % all.length];
        this.index += 1;
      }
    }
    if (u) {
      this.history.push(u.id);
      if (this.history.length > HISTORY) this.history.shift();
      this.pos = this.history.length - 1;
      this.el.dataset.shown = this.history.join(' ');
    }
    this.show(u, fresh);
  }

  /** Back through what was shown. */
  previous() {
    if (!this.running || this.pos <= 0) return;
    this.pos -= 1;
    const u = this.lookup(this.history[this.pos]);
    if (u) this.show(u, false);
    else this.previous();
  }

  lookup(id) {
    const u = this.gallery()?.uploads.get(id);
    return showable(u) ? u : null;
  }

  /** A guestbook message on screen in place of a photo, for a photo's time. */
  showWords(m) {
    this.showingFresh = false;
    this.current = null;
    this.el.dataset.current = '';
    this.showVideo(null);
    this.img.hidden = true;
    this.leaving.hidden = true;
    this.empty.hidden = true;
    this.text.textContent = '';
    this.renderBy();
    this.words.show(m);
    this.schedule();
  }

  show(u, fresh) {
    this.words.hide();
    if (u) this.words.counted();
    this.showingFresh = fresh;
    this.current = u;
    this.empty.textContent = u ? '' : t('slideshow_empty');
    this.empty.hidden = Boolean(u);
    this.el.dataset.current = u?.id ?? '';
    const video = isVideo(u);
    this.showVideo(video ? u : null);
    if (u && !video && this.img.dataset.uploadId !== u.id) {
      // The photo on screen now moves to the layer beneath and fades out as the new one loads.
      if (this.img.currentSrc && !this.img.hidden) {
        this.leaving.src = this.img.currentSrc;
        this.leaving.classList.remove('out');
        this.leaving.hidden = false;
      }
      this.img.classList.add('in');
      this.img.src = previewUrl(u);
      this.img.dataset.uploadId = u.id;
    }
    this.img.hidden = !u || video;
    if (video) this.leaving.hidden = true;
    this.text.textContent = u?.caption || '';
    this.title.textContent = this.event()?.name || '';
    this.renderBy();
    this.schedule();
  }

  fadeIn() {
    // Next frame, so the browser has painted the starting opacity and the transition runs.
    requestAnimationFrame(() => {
      this.img.classList.remove('in');
      this.leaving.classList.add('out');
    });
  }

  /** The video on screen (from its start), or none. */
  showVideo(u) {
    if (!u) {
      this.video.pause();
      this.video.hidden = true;
      return;
    }
    if (this.video.dataset.uploadId !== u.id) {
      this.video.dataset.uploadId = u.id;
      if (u.urls?.preview) this.video.setAttribute('poster', u.urls.preview);
      else this.video.removeAttribute('poster');
      this.video.src = u.urls.original;
    } else {
      this.video.currentTime = 0;
    }
    this.video.hidden = false;
  }

  /** The next step: a photo's time, or a video's end (with a bound, should `ended` never come). */
  schedule() {
    clearTimeout(this.timer);
    this.el.dataset.state = this.paused ? 'paused' : 'playing';
    const video = isVideo(this.current) && !this.video.hidden;
    if (video) {
      if (this.paused) this.video.pause();
      else {
        const id = this.current.id;
        // Refused (autoplay rules, a broken file): a photo's time on its poster. Not when the
        // play was only cut short by moving on.
        this.video.play().catch(() => {
          if (this.current?.id !== id || this.paused || !this.running) return;
          clearTimeout(this.timer);
          this.timer = setTimeout(() => this.next(), SLIDE_MS);
        });
      }
    }
    if (this.paused || !this.running) return;
    const bound = video ? ((this.current.duration_s || 60) + 10) * 1000 : SLIDE_MS;
    this.timer = setTimeout(() => this.next(), bound);
  }

  key(e) {
    if (!this.running) return;
    // A focused control answers Space and Enter itself.
    if ((e.key === ' ' || e.key === 'Enter') && e.target instanceof HTMLButtonElement && this.el.contains(e.target)) return;
    const actions = { Escape: () => !this.screen && this.stop(), ' ': () => this.toggle(), ArrowRight: () => this.next(), ArrowLeft: () => this.previous() };
    const action = actions[e.key];
    if (!action) return;
    e.preventDefault();
    this.wake();
    action();
  }

  /** Shows the controls (and the pointer) for a moment after any touch, move or key. */
  wake() {
    this.el.classList.remove('idle');
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.el.classList.add('idle'), IDLE_MS);
  }

  renderWords() {
    this.el.setAttribute('aria-label', t('slideshow'));
    this.qrLabel.textContent = t('slide_add_photos');
    this.qr.alt = t('slide_add_photos');
    this.prevButton.setAttribute('aria-label', t('previous'));
    this.nextButton.setAttribute('aria-label', t('next'));
    this.closeButton.setAttribute('aria-label', t('close'));
    this.playButton.textContent = this.paused ? '▶' : '❚❚';
    this.playButton.setAttribute('aria-label', this.paused ? t('slide_play') : t('slide_pause'));
    if (!this.img.dataset.uploadId || this.img.hidden) this.empty.textContent = t('slideshow_empty');
    this.renderBy();
  }

  renderBy() {
    const name = this.current?.guest?.display_name;
    this.by.textContent = name ? t('by', { name }) : '';
  }
}

/** Ready, shown and, under the review gate, approved: what the room may see. */
function showable(u) {
  return Boolean(u && u.status === STATUS.READY && u.review !== REVIEW.PENDING && previewUrl(u));
}

function compare(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}
