// The studio's player: the whole film at the studio's quality, each beat's newest clip in place. Its clock is the
// film's: a beat with a clip plays it (its narration with it); a beat not drawn yet (or not drawn by this studio)
// shows its newest still, or its title, while the clock runs through it in silence. A stale beat is marked where it
// plays. It steps frame by frame at the studio's frame rate and from cue to cue.
// studioPlayer(section, fps, viewOf): viewOf(beatId) is the beat's panel as the studio last sent it (or undefined).
// It returns {film(timeline), refresh(), seek(seconds), step(frames), cue(direction), toggle(), time(), playing(),
// onTime(callback)}.
function studioPlayer(section, fps, viewOf) {
  "use strict";
  var video = section.querySelector("video"), picture = section.querySelector("img.placeholder"),
      card = section.querySelector(".card"), mark = section.querySelector(".mark"),
      clock = section.querySelector(".clock"), button = section.querySelector("button.play");
  var film = {duration: 0, beats: []}, at = 0, playing = false, shownClip = "", lastTick = 0, listeners = [];
  var FRAME = 1 / fps, NUDGE = 1e-3;  // (a clip is sought a millisecond into the frame asked: never the one before)

  function beatAt(seconds) {
    var beats = film.beats;
    for (var i = 0; i < beats.length; i += 1) { if (seconds < beats[i].end - 1e-9) { return beats[i]; } }
    return beats[beats.length - 1];
  }
  function clockOf(seconds) {
    var m = Math.floor(seconds / 60), s = seconds - 60 * m;
    return m + ":" + (s < 10 ? "0" : "") + s.toFixed(2);
  }
  function frameOf(seconds) { return Math.round(seconds * fps + 1e-6); }
  function tell() {
    var text = clockOf(at) + " / " + clockOf(film.duration) + " · frame " + frameOf(at);
    if (clock.textContent !== text) { clock.textContent = text; }
    section.dataset.time = at.toFixed(4);
    listeners.forEach(function (listener) { listener(at); });
  }
  function stillFor(view, beat) {  // the newest still at or before the clock (else the beat's first)
    var cues = {}, best = null;
    beat.cues.forEach(function (cue) { cues[cue.name] = cue.at; });
    (view ? view.stills : []).forEach(function (still) {
      var when = cues[still.cue];
      if (best === null || (when !== undefined && when <= at + 1e-9 && when >= (cues[best.cue] || 0))) { best = still; }
    });
    return best;
  }
  function why(view) {
    if (!view) { return "Not drawn by this studio (it draws one beat: BEAT= was given)"; }
    if (view.problem) { return "Not drawn: its scene failed (see its panel below)"; }
    if (!view.clip) { return "No clip yet: " + view.status; }
    return view.stale ? "Stale: drawn before the last change" : "";
  }
  // Show the film at the clock: the beat's clip there, else its still or its title card.
  function show() {
    var beat = beatAt(at);
    if (!beat) { return; }
    var view = viewOf(beat.id), clip = view && !view.problem ? view.clip : "";
    section.dataset.beat = beat.id;
    section.dataset.showing = clip ? "clip" : "still";
    section.classList.toggle("stale", !!(view && view.stale));
    var said = why(view);
    mark.textContent = said;
    mark.hidden = !said;
    if (clip) {
      video.hidden = false;
      picture.hidden = card.hidden = true;
      if (shownClip !== clip) {  // (sought once it has loaded: loadedmetadata)
        shownClip = clip;
        video.setAttribute("src", clip);
      } else if (!playing && video.readyState >= 1 && Math.abs(video.currentTime - (at - beat.start)) > FRAME / 2) {
        video.currentTime = Math.min(at - beat.start + NUDGE, Math.max(0, video.duration - NUDGE));
      }
      if (playing && video.paused && video.readyState >= 1) { play(); }
    } else {
      if (!video.paused) { video.pause(); }
      video.hidden = true;
      var still = stillFor(view, beat);
      picture.hidden = !still;
      card.hidden = !!still;
      if (still && picture.getAttribute("src") !== still.url) {
        picture.setAttribute("src", still.url);
        picture.setAttribute("alt", beat.title + " at the cue '" + still.cue + "'");
      }
      card.textContent = beat.title;
    }
    tell();
  }
  function play() {
    var started = video.play();
    if (started && started.catch) {
      started.catch(function (error) {
        if (error.name !== "AbortError") { stop(); mark.hidden = false; mark.textContent = "Could not play: " + error.message; }
      });
    }
  }
  function stop() {
    playing = false;
    if (!video.paused) { video.pause(); }
    button.textContent = "Play";
    button.setAttribute("aria-pressed", "false");
  }
  function seek(seconds) {
    at = Math.max(0, Math.min(film.duration, seconds));
    show();
  }
  // While playing: the clock follows the clip (or the wall's clock through a beat with none); at a beat's end the
  // next beat's clip takes over.
  function tick(now) {
    if (!playing) { return; }
    var beat = beatAt(at), elapsed = lastTick ? (now - lastTick) / 1000 : 0;
    lastTick = now;
    if (section.dataset.showing === "clip") {
      if (!video.seeking && video.readyState >= 2) { at = beat.start + video.currentTime; }
      if (video.ended) { at = beat.end; }
    } else {
      at += elapsed;
    }
    if (at >= film.duration - 1e-9) { at = film.duration; stop(); show(); return; }
    if (at >= beat.end - 1e-9) { show(); } else { tell(); }
    window.requestAnimationFrame(tick);
  }
  function toggle() {
    if (playing) { stop(); show(); return; }
    if (at >= film.duration - 1e-9) { at = 0; }
    playing = true;
    lastTick = 0;
    button.textContent = "Pause";
    button.setAttribute("aria-pressed", "true");
    show();
    window.requestAnimationFrame(tick);
  }
  video.addEventListener("loadedmetadata", function () {
    var beat = beatAt(at);
    video.currentTime = Math.min(Math.max(0, at - beat.start) + NUDGE, Math.max(0, video.duration - NUDGE));
    if (playing && section.dataset.showing === "clip") { play(); }
  });
  video.addEventListener("error", function () {  // (a clip replaced by a newer one as it loaded: the newer one comes)
    shownClip = "";
    if (playing) {
      stop();
      mark.hidden = false;
      mark.textContent = "Could not play this beat's clip; it is drawn again at the next save";
    }
  });
  button.addEventListener("click", toggle);
  return {
    film: function (data) { film = data; seek(at); },
    refresh: function () { if (film.beats.length) { show(); } },
    seek: function (seconds) { stop(); seek(seconds); },
    step: function (frames) { stop(); seek((frameOf(at) + frames) / fps); },
    cue: function (direction) {
      var times = [];
      film.beats.forEach(function (beat) { beat.cues.forEach(function (cue) { times.push(cue.at); }); });
      times.sort(function (a, b) { return a - b; });
      var next = direction > 0 ? times.filter(function (t) { return t > at + 1e-6; })[0] :
                                 times.filter(function (t) { return t < at - 1e-6; }).pop();
      stop();
      seek(next === undefined ? (direction > 0 ? film.duration : 0) : next);
    },
    toggle: toggle,
    time: function () { return at; },
    playing: function () { return playing; },
    onTime: function (listener) { listeners.push(listener); }
  };
}
