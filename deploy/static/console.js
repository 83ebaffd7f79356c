(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var token = sessionStorage.getItem("modeldesk-token") || "";  // sent as a header, never in a URL
  var labelsCount = 0;
  // how this model's input is taken (the service's ModelInput.describe()["console"]): no kind names here
  var input = { widget: "file", preview: "image", accept: "image/*", types: ["image/"], suffixes: [], untyped: true };
  var labelsOrder = [];
  $("token").value = token;

  function headers() { return token ? { "Authorization": "Bearer " + token } : {}; }
  function api(path, options) {
    options = options || {};
    options.headers = Object.assign(headers(), options.headers || {});
    return fetch(path, options).then(function (response) {
      return response.text().then(function (text) {
        var body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text || response.statusText }; }
        if (!response.ok) {
          var error = new Error((body && body.error) || ("HTTP " + response.status));
          error.status = response.status;
          throw error;
        }
        return body;
      });
    });
  }
  function setStatus(kind, text) {
    $("status").className = "pill pill-" + kind;
    $("status-text").textContent = text;
  }
  function showError(message) {
    $("error").textContent = message;
    $("error").hidden = !message;
  }
  function pct(p) {
    if (p > 0 && p < 0.001) return "<0.1%";
    return (p * 100).toFixed(p >= 0.995 || p < 0.001 ? 0 : 1) + "%";
  }
  function needToken(message) {
    $("token-form").classList.add("needed");
    setStatus("bad", "Token needed");
    showError(message || "This service needs an access token. Enter it at the top right.");
  }

  function renderCard(card) {
    var pre = card.preprocessing || {};
    var metrics = card.metrics || {};
    var comp = card.compression;
    var title = card.name || card.template || "Image classifier";
    $("model-name").textContent = title;
    setInput(card.input || {});
    $("model-id").textContent = card.id;
    document.title = title + " · ModelDesk";
    labelsCount = (card.labels || []).length;
    labelsOrder = card.labels || [];
    if (card.target === "boxes") {
      $("result-empty").querySelector("p").textContent = "Results appear here: every object the model finds, boxed on the photo, with its label and confidence.";
    }
    var facts = [
      ["Task", (card.task || "").replace(/-/g, " ")],
      ["Labels", String(labelsCount)],
      ["Input", (card.input && card.input.words) || (pre.size || "?") + " × " + (pre.size || "?") + " px"],
      ["Template", card.template || "—"],
    ];
    if (typeof metrics.accuracy === "number") facts.push(["Accuracy", pct(metrics.accuracy)]);
    if (typeof metrics.macro_f1 === "number") facts.push(["Macro F1", metrics.macro_f1.toFixed(3)]);
    if (typeof metrics.map50 === "number") facts.push(["mAP at IoU 0.5", metrics.map50.toFixed(3)]);
    if (typeof metrics.map === "number") facts.push(["mAP 0.5:0.95", metrics.map.toFixed(3)]);
    if (typeof card.score_threshold === "number") facts.push(["Box threshold", pct(card.score_threshold)]);
    if (card.novelty && card.novelty.output) facts.push(["Unfamiliar inputs", "answered “not sure”"]);
    facts.push(["Compression", comp ? (comp.words || comp.chosen) : "none (the original, full size)"]);
    if (card.created) facts.push(["Created", String(card.created).replace("T", " ").slice(0, 16)]);
    $("facts").innerHTML = "";
    facts.forEach(function (f) {
      var div = document.createElement("div");
      var dt = document.createElement("dt"); dt.textContent = f[0];
      var dd = document.createElement("dd"); dd.textContent = f[1]; dd.title = f[1];
      div.appendChild(dt); div.appendChild(dd); $("facts").appendChild(div);
    });
    $("labels").innerHTML = "";
    (card.labels || []).slice(0, 60).forEach(function (l) {
      var s = document.createElement("span"); s.textContent = l; $("labels").appendChild(s);
    });
    if (labelsCount > 60) {
      var s = document.createElement("span"); s.textContent = "+" + (labelsCount - 60) + " more"; $("labels").appendChild(s);
    }
    $("card-json").textContent = JSON.stringify(card, null, 2);
  }

  function renderCurl() {
    var base = window.location.origin;
    var auth = token ? " \\\n  -H 'Authorization: Bearer " + token.replace(/./g, "•") + "'" : "";
    var row = {};
    (input.columns || []).slice(0, 3).forEach(function (c) { row[c.name] = c.type === "number" ? 1 : (c.values && c.values[0]) || "…"; });
    $("curl").textContent = input.widget === "form"
      ? "curl -H 'Content-Type: application/json'" + auth + " \\\n  -d '" + JSON.stringify({ rows: [row] }) + "' " + base + "/v1/predict"
      : input.widget === "text"
      ? "curl -H 'Content-Type: application/json'" + auth + " \\\n  -d '{\"text\": \"your text\"}' " + base + "/v1/predict"
      : "curl -F file=@photo.jpg" + auth + " \\\n  " + base + "/v1/predict";
    $("docs-link").href = "docs";
  }

  var COLORS = ["#2f6fed", "#e11d48", "#059669", "#d97706", "#0891b2", "#7c3aed", "#65a30d", "#db2777"];

  function drawBoxes(boxes) {
    // The photo is redrawn on a canvas with the boxes on top (same size and fit as the preview).
    var img = $("preview"), canvas = $("overlay");
    var draw = function () {
      canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
      var ctx = canvas.getContext("2d");
      ctx.drawImage(img, 0, 0);
      var line = Math.max(2, Math.round(Math.max(canvas.width, canvas.height) / 250));
      ctx.font = "600 " + (line * 7) + "px system-ui, sans-serif";
      boxes.forEach(function (b) {
        var color = COLORS[(labelsOrder.indexOf(b.label) + COLORS.length) % COLORS.length];
        var x = b.box[0], y = b.box[1], w = b.box[2] - b.box[0], h = b.box[3] - b.box[1];
        ctx.lineWidth = line; ctx.strokeStyle = color; ctx.strokeRect(x, y, w, h);
        var text = b.label + " " + pct(b.score);
        var tw = ctx.measureText(text).width + line * 3, th = line * 9;
        var ty = y >= th ? y - th : y;
        ctx.fillStyle = color; ctx.fillRect(x - line / 2, ty, tw, th);
        ctx.fillStyle = "#fff"; ctx.fillText(text, x + line, ty + th - line * 2.2);
      });
      img.hidden = true; canvas.hidden = false;
    };
    if (img.complete && img.naturalWidth) draw(); else img.addEventListener("load", draw, { once: true });
  }

  function renderPrediction(prediction, latency, roundTrip) {
    $("result-empty").hidden = true;
    $("result").hidden = false;
    var boxes = prediction.boxes;
    if (prediction.value !== undefined) { // a number predicted (a table regression): the number, no scores
      $("top-label").textContent = prediction.value === null ? "No answer" : prediction.label;
      $("top-score").parentNode.hidden = true; $("unsure").hidden = true; $("bars").innerHTML = ""; $("more").textContent = "";
      $("latency").hidden = false;
      $("latency").textContent = latency.toFixed(1) + " ms inference · " + roundTrip.toFixed(0) + " ms total";
      return;
    }
    $("top-label").textContent = boxes ? (boxes.length ? boxes.length + (boxes.length === 1 ? " object found" : " objects found") : "No objects found") : prediction.label;
    $("top-score").parentNode.hidden = false;
    $("top-score").textContent = boxes && !boxes.length ? "—" : pct(prediction.score);
    // "unlike anything it was trained on": the label is only the closest guess
    var unsure = !boxes && prediction.sure === false;
    if (unsure) $("top-label").textContent = "Not sure";
    $("unsure").hidden = !unsure;
    $("unsure").textContent = unsure ? "This is unlike what the model was trained on. Closest guess: " + prediction.label + "." : "";
    var entries = boxes ? boxes.map(function (b) { return [b.label + "  [" + b.box.map(Math.round).join(", ") + "]", b.score]; })
      : Object.keys(prediction.scores).map(function (k) { return [k, prediction.scores[k]]; });
    entries.sort(function (a, b) { return b[1] - a[1]; });
    if (boxes) drawBoxes(boxes);
    var shown = entries.slice(0, 10);
    var bars = $("bars");
    bars.innerHTML = "";
    shown.forEach(function (e) {
      var li = document.createElement("li");
      var name = document.createElement("span"); name.className = "bar-label"; name.textContent = e[0]; name.title = e[0];
      var track = document.createElement("div"); track.className = "bar-track";
      var fill = document.createElement("div"); fill.className = "bar-fill";
      fill.style.width = Math.max(0, Math.min(100, e[1] * 100)) + "%";
      track.appendChild(fill);
      var value = document.createElement("span"); value.className = "bar-value"; value.textContent = pct(e[1]);
      li.appendChild(name); li.appendChild(track); li.appendChild(value); bars.appendChild(li);
    });
    $("more").textContent = entries.length > shown.length ? (entries.length - shown.length) + (boxes ? " more boxes" : " more labels below 1%") : "";
    $("latency").hidden = false;
    $("latency").textContent = latency.toFixed(1) + " ms inference · " + roundTrip.toFixed(0) + " ms total";
  }

  // --- the input widget follows what the service says the model takes: a file (an image, a WAV clip) or a text
  function setInput(described) {
    var shown = described.console || {};
    Object.keys(shown).forEach(function (key) { input[key] = shown[key]; });
    var text = input.widget === "text", form = input.widget === "form";
    $("drop").hidden = text || form;
    $("text-tools").hidden = !text;
    $("row-tools").hidden = !form;
    if (form) { $("try-hint").textContent = input.hint || "Fill in a row"; window.modeldeskRows.setColumns(input.columns); renderCurl(); if (window.modeldeskLive) window.modeldeskLive.setInputKind(null); return; }
    if (text) { $("try-hint").textContent = input.hint || "Type or paste a text"; renderCurl(); if (window.modeldeskLive) window.modeldeskLive.setInputKind(null); return; }
    $("file").accept = input.accept || "*/*";
    if (input.hint) $("try-hint").textContent = input.hint;
    if (input.drop_title) $("drop-title").textContent = input.drop_title;
    if (input.drop_formats) $("drop-formats").textContent = input.drop_formats;
    $("replace-noun").textContent = described.noun || "image";
    $("audio-tools").hidden = !input.record;
    var canRecord = !!(navigator.mediaDevices && navigator.mediaDevices.getUserMedia && window.AudioContext);
    $("record").disabled = !canRecord;
    if (!canRecord) $("record-text").textContent = "No microphone access here: open the console as 127.0.0.1 or over HTTPS";
    if (window.modeldeskLive) window.modeldeskLive.setInputKind(input.live || null);
  }

  function drawWave(samples) {
    var canvas = $("wave"), ctx = canvas.getContext("2d");
    var w = canvas.width, h = canvas.height, step = Math.max(1, Math.floor(samples.length / w));
    ctx.clearRect(0, 0, w, h);
    ctx.fillStyle = "#7fa5f4";
    for (var x = 0; x < w; x++) {
      var lo = 0, hi = 0;
      for (var i = x * step; i < Math.min(samples.length, (x + 1) * step); i++) {
        if (samples[i] < lo) lo = samples[i];
        if (samples[i] > hi) hi = samples[i];
      }
      ctx.fillRect(x, h / 2 - hi * h / 2, 1, Math.max(1, (hi - lo) * h / 2));
    }
  }

  function showClip(file) {
    var url = URL.createObjectURL(file);
    $("player").src = url; $("player").hidden = false;
    $("preview").hidden = true; $("drop-empty").hidden = true; $("replace").hidden = false;
    $("file-meta").textContent = file.name + " · " + (file.size / 1024).toFixed(0) + " KB";
    file.arrayBuffer().then(function (data) {
      var context = new (window.AudioContext || window.webkitAudioContext)();
      return context.decodeAudioData(data).then(function (buffer) {
        $("wave").hidden = false;
        drawWave(buffer.getChannelData(0));
        $("file-meta").textContent = file.name + " · " + buffer.duration.toFixed(2) + " s · " +
          buffer.sampleRate + " Hz · " + (file.size / 1024).toFixed(0) + " KB";
        context.close();
      });
    }).catch(function () { $("wave").hidden = true; });
  }

  // 16-bit PCM mono WAV bytes of float samples in [-1, 1]
  function encodeWav(samples, rate) {
    var buffer = new ArrayBuffer(44 + samples.length * 2), view = new DataView(buffer);
    function text(offset, value) { for (var i = 0; i < value.length; i++) view.setUint8(offset + i, value.charCodeAt(i)); }
    text(0, "RIFF"); view.setUint32(4, 36 + samples.length * 2, true); text(8, "WAVE");
    text(12, "fmt "); view.setUint32(16, 16, true); view.setUint16(20, 1, true); view.setUint16(22, 1, true);
    view.setUint32(24, rate, true); view.setUint32(28, rate * 2, true); view.setUint16(32, 2, true);
    view.setUint16(34, 16, true); text(36, "data"); view.setUint32(40, samples.length * 2, true);
    for (var i = 0; i < samples.length; i++) {
      var v = Math.max(-1, Math.min(1, samples[i]));
      view.setInt16(44 + i * 2, v < 0 ? v * 32768 : v * 32767, true);
    }
    return new Blob([buffer], { type: "audio/wav" });
  }

  // the microphone's samples at 16 kHz (resampled by the browser's own OfflineAudioContext)
  function to16k(samples, rate) {
    if (rate === 16000) return Promise.resolve(samples);
    var offline = new OfflineAudioContext(1, Math.ceil(samples.length * 16000 / rate), 16000);
    var buffer = offline.createBuffer(1, samples.length, rate);
    buffer.copyToChannel(samples, 0);
    var source = offline.createBufferSource();
    source.buffer = buffer; source.connect(offline.destination); source.start();
    return offline.startRendering().then(function (rendered) { return rendered.getChannelData(0); });
  }

  var RECORD_SECONDS = 2;
  function record() {
    var button = $("record");
    if (button.classList.contains("recording")) return;
    showError("");
    navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false } }).then(function (stream) {
      var context = new (window.AudioContext || window.webkitAudioContext)();
      var source = context.createMediaStreamSource(stream);
      var processor = context.createScriptProcessor(4096, 1, 1);
      var chunks = [], started = performance.now();
      button.classList.add("recording");
      processor.onaudioprocess = function (e) {
        var data = e.inputBuffer.getChannelData(0), peak = 0;
        chunks.push(new Float32Array(data));
        for (var i = 0; i < data.length; i++) peak = Math.max(peak, Math.abs(data[i]));
        $("meter-fill").style.width = Math.min(100, peak * 140) + "%";
        var left = RECORD_SECONDS - (performance.now() - started) / 1000;
        $("record-text").textContent = "Recording… " + Math.max(0, left).toFixed(1) + " s";
      };
      source.connect(processor); processor.connect(context.destination);
      setTimeout(function () {
        processor.disconnect(); source.disconnect();
        stream.getTracks().forEach(function (t) { t.stop(); });
        var length = chunks.reduce(function (n, c) { return n + c.length; }, 0), all = new Float32Array(length), at = 0;
        chunks.forEach(function (c) { all.set(c, at); at += c.length; });
        var rate = context.sampleRate;
        context.close();
        button.classList.remove("recording");
        $("meter-fill").style.width = "0";
        $("record-text").textContent = "Record " + RECORD_SECONDS + " s from the microphone";
        to16k(all, rate).then(function (samples) {
          var blob = encodeWav(samples, 16000);
          predict(new File([blob], "recording.wav", { type: "audio/wav" }));
        });
      }, RECORD_SECONDS * 1000);
    }).catch(function (error) {
      showError("The microphone cannot be used: " + (error.message || error.name) + ". You can still drop a WAV file.");
    });
  }
  $("record").addEventListener("click", record);

  function takes(file) {
    // a file the model takes: by its type, by its name's ending, or (where allowed) one without a type
    var name = file.name.toLowerCase();
    if ((input.suffixes || []).some(function (s) { return name.slice(-s.length) === s; })) return true;
    if (!file.type) return !!input.untyped;
    return (input.types || []).some(function (t) { return file.type.indexOf(t) >= 0; });
  }

  function predict(file) {
    if (!file) return;
    if (!takes(file)) { showError(file.name + " " + (input.refused || "cannot be read by this model.")); return; }
    showError("");
    if (input.preview === "clip") { showClip(file); sendFile(file); return; }
    var url = URL.createObjectURL(file);
    var img = $("preview");
    img.onload = function () {
      $("file-meta").textContent = file.name + " · " + img.naturalWidth + " × " + img.naturalHeight + " px · " + (file.size / 1024).toFixed(0) + " KB";
    };
    img.src = url; img.hidden = false; $("wave").hidden = true; $("overlay").hidden = true; $("drop-empty").hidden = true; $("replace").hidden = false;
    sendFile(file);
  }

  function sendText() {
    var value = $("text-input").value;
    if (!value.trim()) { showError("Type a text first."); return; }
    showError("");
    $("busy").hidden = false;
    var start = performance.now();
    api("v1/predict", { method: "POST", headers: { "Content-Type": "application/json" },
                        body: JSON.stringify({ text: value }) }).then(function (body) {
      $("file-meta").textContent = value.length + " characters";
      renderPrediction(body.predictions[0], body.latency_ms, performance.now() - start);
    }).catch(function (error) {
      if (error.status === 401) needToken(error.message); else showError(error.message);
    }).then(function () { $("busy").hidden = true; });
  }
  $("text-send").addEventListener("click", sendText);
  $("text-input").addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); sendText(); }
  });

  function sendFile(file) {
    $("busy").hidden = false;
    var form = new FormData();
    form.append("file", file, file.name);
    var start = performance.now();
    api("v1/predict", { method: "POST", body: form }).then(function (body) {
      renderPrediction(body.predictions[0], body.latency_ms, performance.now() - start);
    }).catch(function (error) {
      if (error.status === 401) needToken(error.message); else showError(error.message);
    }).then(function () { $("busy").hidden = true; });
  }

  function load() {
    renderCurl();
    api("readyz").then(function (ready) {
      setStatus("ok", "Ready" + (ready.providers ? " · " + ready.providers[0].replace("ExecutionProvider", "") : ""));
      $("token-form").classList.remove("needed");
      showError("");
      return api("v1/model").then(renderCard);
    }).catch(function (error) {
      if (error.status === 401) needToken();
      else if (error.status === 503) { setStatus("wait", "Loading model"); setTimeout(load, 1000); }
      else { setStatus("bad", "Offline"); showError("Cannot reach the service: " + error.message); }
    });
  }

  var drop = $("drop");
  ["dragenter", "dragover"].forEach(function (type) {
    drop.addEventListener(type, function (e) { e.preventDefault(); drop.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    drop.addEventListener(type, function (e) { e.preventDefault(); drop.classList.remove("over"); });
  });
  drop.addEventListener("drop", function (e) { predict(e.dataTransfer.files[0]); });
  drop.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); $("file").click(); } });
  $("file").addEventListener("change", function (e) { predict(e.target.files[0]); e.target.value = ""; });
  window.addEventListener("paste", function (e) {
    var items = (e.clipboardData || {}).files || [];
    if (items.length) predict(items[0]);
  });
  $("token-form").addEventListener("submit", function (e) {
    e.preventDefault();
    token = $("token").value.trim();
    sessionStorage.setItem("modeldesk-token", token);
    load();
  });
  // what live.js (the webcam / microphone live mode) uses of this console
  window.modeldeskConsole = { api: api, renderPrediction: renderPrediction, showError: showError, needToken: needToken, to16k: to16k, encodeWav: encodeWav, drawWave: drawWave };
  load();
})();
