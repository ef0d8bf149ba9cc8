// Both pages: a chapter or a transcript line seeks the film; the chapter playing is marked.
(function () {
  "use strict";
  var video = document.getElementById("film");
  if (!video) { return; }
  var chapters = Array.prototype.slice.call(document.querySelectorAll("button.chapter"));
  document.querySelectorAll("button.seek, a.clause").forEach(function (control) {
    control.addEventListener("click", function (event) {
      event.preventDefault();  // (a phrase is a link to the film, for Enter and for the reader's eye: it seeks)
      video.currentTime = Number(control.dataset.start);
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
})();
