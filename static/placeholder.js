// An upload's placeholder drawn behind its image while the image loads. Its own module, so that
// the decoder (`thumbhash.js`) is fetched with the gallery, not before a guest's name form.

import { thumbHashToDataURL } from './thumbhash.js';

/** Decoded placeholders by their hash: a grid re-renders its tiles often, each decode is 1024 cosines. */
const placeholders = new Map();

/**
 * Draws the Upload's placeholder (its `placeholder`, a ThumbHash: the photo's colours, blurred)
 * as the background of `img` until the image has loaded, so a slow thumb or preview shows the
 * photo's shape at once instead of an empty box. `fit` is the image's `object-fit` (`cover` for
 * tiles, `contain` for the lightbox and the slideshow), so the two line up. Returns `img`.
 */
export function withPlaceholder(img, u, fit = 'cover') {
  const hash = u?.placeholder;
  if (!hash) return img;
  if (!placeholders.has(hash)) placeholders.set(hash, thumbHashToDataURL(hash));
  const url = placeholders.get(hash);
  if (!url) return img;
  img.classList.add('with-placeholder', `placeholder-${fit}`);
  img.dataset.placeholder = 'drawn';
  img.style.backgroundImage = `url("${url}")`;
  // Once the photo is there the placeholder goes: with `contain` its approximate aspect ratio
  // could show at the edges.
  img.addEventListener('load', () => {
    img.style.backgroundImage = '';
    img.dataset.placeholder = 'done';
  }, { once: true });
  return img;
}
