// Both pages: a chapter, a transcript line or a step seeks the film and plays it from there, in sight: from below the
// film (or while it plays out of sight) it follows the reader as a small player, until they scroll back to it or
// close it. The chapter playing is marked.
var filmSeek = (function () {
  "use strict";
  var video = document.getElementById("film");
  if (!video) { return function () {}; }
  var frame = document.getElementById("film-frame"), close = document.getElementById("film-close");
  var chapters = Array.prototype.slice.call(document.querySelectorAll("button.chapter"));
  function inSight() {
    var place = frame.getBoundingClientRect();
    return place.bottom > 0.25 * place.height && place.top < window.innerHeight - 0.25 * place.height;
  }
  function dock(docked) {
    frame.classList.toggle("docked", docked);
    close.hidden = !docked;
    // The page makes room under the small player: the end of the page scrolls above it, and whatever is scrolled
    // into view (the focus, a step's buttons) stops above it too.
    var room = docked ? Math.ceil(video.getBoundingClientRect().height + 2 * close.offsetHeight + 32) + "px" : "";
    document.body.style.paddingBottom = room;
    document.documentElement.style.scrollPaddingBottom = room;
    var focused = document.activeElement;
    if (docked && focused && focused !== document.body && !frame.contains(focused)) {
      var place = focused.getBoundingClientRect(), player = close.getBoundingClientRect();
      if (place.bottom > player.top) { focused.scrollIntoView({block: "nearest"}); }
    }
  }
  function seek(seconds) {
    video.currentTime = seconds;
    if (!inSight()) { dock(true); }
    var playing = video.play();
    if (playing && playing.catch) { playing.catch(function () {}); }  // (a browser that refuses: the reader presses play)
  }
  function follow() {  // playing and out of sight: it follows; back in sight: it goes home
    var docked = frame.classList.contains("docked"), seen = inSight();
    if (docked && seen) { dock(false); } else if (!docked && !seen && !video.paused) { dock(true); }
  }
  window.addEventListener("scroll", follow, {passive: true});
  close.addEventListener("click", function () { video.pause(); dock(false); });
  document.querySelectorAll("button.seek, a.clause").forEach(function (control) {
    control.addEventListener("click", function (event) {
      event.preventDefault();  // (a phrase is a link to the film, for Enter and for the reader's eye: it seeks)
      seek(Number(control.dataset.start));
    });
  });
  function mark() {
    var now = video.currentTime, current = null;
    chapters.forEach(function (b) { if (Number(b.dataset.start) <= now + 0.01) { current = b; } });
    chapters.forEach(function (b) {
      if (b === current) { b.setAttribute("aria-current", "true"); } else { b.removeAttribute("aria-current"); }
    });
  }
  video.addEventListener("timeupdate", mark);
  video.addEventListener("seeked", mark);
  mark();
  return seek;
})();
