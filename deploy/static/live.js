// Live mode of the model console: the browser's webcam (image models) or microphone (sound models)
// goes to /v1/predict again and again, one request at a time: the next frame is sent when the
// answer to the last one is back, so the rate is what the machine sustains and nothing queues.
// The answer updates in place; a detector's boxes are drawn on the live picture. Opening the
// console at "#start-live" starts it at once. Uses the console's own calls (window.modeldeskConsole).
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var CLIP_S = 2;
  var mode = "camera", running = false, stream = null, boxes = [], answers = [], audio = null;
  var COLORS = ["#2f6fed", "#e11d48", "#059669", "#d97706", "#0891b2", "#7c3aed", "#65a30d", "#db2777"];

  var tools = document.createElement("div");
  tools.className = "live-tools";
  tools.innerHTML = '<button id="live" type="button" class="btn-record"><span class="live-dot"></span>' +
    '<span id="live-text">Live from the webcam</span></button><span id="live-rate" class="hint"></span>';
  var video = document.createElement("video");
  video.id = "live-video"; video.muted = true; video.playsInline = true; video.hidden = true;
  var canvas = document.createElement("canvas");
  canvas.id = "live-canvas"; canvas.hidden = true;
  $("drop").appendChild(video); $("drop").appendChild(canvas);
  $("drop").parentNode.insertBefore(tools, $("audio-tools"));

  function say(text) { $("live-text").textContent = text; }
  function can() {
    return !!(navigator.mediaDevices && navigator.mediaDevices.getUserMedia) && (mode === "camera" || (mode === "microphone" && window.AudioContext));
  }
  // next: the input's live mode as the service describes it, "camera", "microphone" or none
  function setInputKind(next) {
    stop();
    mode = next;
    tools.hidden = !mode;
    say(mode === "microphone" ? "Listen live" : "Live from the webcam");
    $("live").disabled = !can();
    if (!can() && mode) $("live-rate").textContent = "No camera or microphone access here: open the console as 127.0.0.1 or over HTTPS";
    if (location.hash === "#start-live" && can()) start();
  }

  function rate() {
    var now = performance.now();
    answers = answers.filter(function (t) { return now - t < 3000; });
    answers.push(now);
    if (answers.length > 1) $("live-rate").textContent = ((answers.length - 1) * 1000 / (now - answers[0])).toFixed(1) + " answers a second";
  }

  function show(body, started) {
    var console_ = window.modeldeskConsole;
    var prediction = body.predictions[0];
    boxes = prediction.boxes || [];
    console_.renderPrediction(prediction, body.latency_ms, performance.now() - started);
    $("preview").hidden = true; $("overlay").hidden = true;  // the live picture, not the last photo
    rate();
  }

  function failed(error) {
    stop();
    if (error.status === 401) window.modeldeskConsole.needToken(error.message);
    else window.modeldeskConsole.showError("Live stopped: " + error.message);
  }

  function send(file) {
    var form = new FormData();
    form.append("file", file, file.name);
    var started = performance.now();
    return window.modeldeskConsole.api("v1/predict", { method: "POST", body: form }).then(function (body) {
      if (running) show(body, started);
    });
  }

  // --- the webcam ------------------------------------------------------------------------------
  function paint() {
    if (!running || mode !== "camera") return;
    if (video.videoWidth) {
      canvas.width = video.videoWidth; canvas.height = video.videoHeight;
      var ctx = canvas.getContext("2d");
      ctx.drawImage(video, 0, 0);
      var line = Math.max(2, Math.round(Math.max(canvas.width, canvas.height) / 250));
      ctx.font = "600 " + (line * 7) + "px system-ui, sans-serif";
      boxes.forEach(function (b, i) {
        var color = COLORS[i % COLORS.length];
        ctx.lineWidth = line; ctx.strokeStyle = color;
        ctx.strokeRect(b.box[0], b.box[1], b.box[2] - b.box[0], b.box[3] - b.box[1]);
        ctx.fillStyle = color;
        ctx.fillText(b.label + " " + Math.round(b.score * 100) + "%", b.box[0] + line, Math.max(b.box[1] - line, line * 7));
      });
    }
    requestAnimationFrame(paint);
  }

  function nextFrame() {
    if (!running) return;
    if (!video.videoWidth) { setTimeout(nextFrame, 50); return; }
    var grab = document.createElement("canvas");
    grab.width = video.videoWidth; grab.height = video.videoHeight;
    grab.getContext("2d").drawImage(video, 0, 0);
    grab.toBlob(function (blob) {
      if (!running) return;
      send(new File([blob], "frame.jpg", { type: "image/jpeg" })).then(nextFrame, failed);
    }, "image/jpeg", 0.9);
  }

  // --- the microphone: the last two seconds, again and again -----------------------------------
  function nextClip() {
    if (!running) return;
    var total = audio.chunks.reduce(function (n, c) { return n + c.length; }, 0);
    if (total < audio.rate * CLIP_S) { setTimeout(nextClip, 100); return; }
    var all = new Float32Array(total), at = 0;
    audio.chunks.forEach(function (c) { all.set(c, at); at += c.length; });
    var clip = all.subarray(total - audio.rate * CLIP_S);
    var console_ = window.modeldeskConsole;
    console_.to16k(clip, audio.rate).then(function (samples) {
      console_.drawWave(samples); $("wave").hidden = false;  // what the model hears
      var blob = new Blob([console_.encodeWav(samples, 16000)], { type: "audio/wav" });
      return send(new File([blob], "live.wav", { type: "audio/wav" }));
    }).then(nextClip, failed);
  }

  function start() {
    if (running || !can()) return;
    window.modeldeskConsole.showError("");
    var audioKind = mode === "microphone";
    navigator.mediaDevices.getUserMedia(audioKind ? { audio: { echoCancellation: false, noiseSuppression: false } } : { video: true })
      .then(function (media) {
        stream = media; running = true; boxes = []; answers = [];
        $("live").classList.add("recording");
        say(audioKind ? "Stop listening" : "Stop live");
        $("drop-empty").hidden = true; $("replace").hidden = true; $("wave").hidden = true;
        if (audioKind) {
          var context = new AudioContext(), source = context.createMediaStreamSource(media);
          var processor = context.createScriptProcessor(4096, 1, 1);
          audio = { context: context, processor: processor, rate: context.sampleRate, chunks: [] };
          processor.onaudioprocess = function (e) {
            audio.chunks.push(new Float32Array(e.inputBuffer.getChannelData(0)));
            var keep = audio.rate * CLIP_S, total = 0;
            for (var i = audio.chunks.length - 1; i >= 0; i--) { total += audio.chunks[i].length; if (total > keep) { audio.chunks = audio.chunks.slice(i); break; } }
          };
          source.connect(processor); processor.connect(context.destination);
          nextClip();
        } else {
          video.srcObject = media; video.play();
          $("preview").hidden = true; $("overlay").hidden = true; canvas.hidden = false;
          requestAnimationFrame(paint);
          nextFrame();
        }
      })
      .catch(function (error) {
        window.modeldeskConsole.showError((audioKind ? "The microphone" : "The webcam") + " could not be opened: " + error.message);
      });
  }

  function stop() {
    if (!running) return;
    running = false;
    if (stream) stream.getTracks().forEach(function (t) { t.stop(); });
    stream = null;
    if (audio) { audio.processor.disconnect(); audio.context.close(); audio = null; }
    canvas.hidden = true; video.hidden = true; video.srcObject = null;
    if (mode === "microphone") $("wave").hidden = true;
    var photo = $("preview").getAttribute("src");  // back to the last photo tried, or to the empty drop box
    if (photo && mode === "camera") { $("preview").hidden = false; $("replace").hidden = false; } else if (mode === "camera") $("drop-empty").hidden = false;
    $("live").classList.remove("recording");
    $("live-rate").textContent = "";
    say(mode === "microphone" ? "Listen live" : "Live from the webcam");
  }

  $("live").addEventListener("click", function () { if (running) stop(); else start(); });
  window.modeldeskLive = { setInputKind: setInputKind, start: start, stop: stop, running: function () { return running; } };
})();
