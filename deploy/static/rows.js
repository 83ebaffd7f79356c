// The console's form for table models: one field per column the model reads (from /v1/model's
// input.console.columns), and a CSV of many rows answered in batches, the answers as a CSV download.
// Uses what console.js exposes (window.modeldeskConsole); no library, nothing fetched from elsewhere.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var columns = [];
  var BATCH = 32; // the service's default limit of items per request
  var downloadUrl = null;

  function setColumns(list) {
    columns = list || [];
    var form = $("row-form");
    form.innerHTML = "";
    columns.forEach(function (column, i) {
      var label = document.createElement("label");
      var name = document.createElement("span"); name.textContent = column.name; name.title = column.name;
      var field = document.createElement("input");
      field.id = "row-field-" + i; field.dataset.column = column.name; field.dataset.type = column.type;
      if (column.type === "number") { field.type = "number"; field.step = "any"; field.placeholder = "a number"; }
      else if (column.type === "date") { field.type = "date"; }
      else { field.type = "text"; field.placeholder = column.type === "category" ? "choose or type" : "a text"; }
      if (column.values && column.values.length) {
        var list = document.createElement("datalist"); list.id = "row-values-" + i;
        column.values.forEach(function (v) { var o = document.createElement("option"); o.value = v; list.appendChild(o); });
        label.appendChild(list); field.setAttribute("list", list.id);
      }
      label.appendChild(name); label.appendChild(field); form.appendChild(label);
    });
  }

  // the form as a row: numbers as numbers, empty fields left out (a missing cell, filled in by the model)
  function formRow() {
    var row = {};
    Array.prototype.forEach.call($("row-form").querySelectorAll("input"), function (field) {
      var value = field.value.trim();
      if (!value) return;
      row[field.dataset.column] = field.dataset.type === "number" && isFinite(Number(value)) ? Number(value) : value;
    });
    return row;
  }

  function post(rows) {
    return window.modeldeskConsole.api("v1/predict", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ rows: rows })
    });
  }

  function failed(error) {
    var console_ = window.modeldeskConsole;
    if (error.status === 401) console_.needToken(error.message); else console_.showError(error.message);
  }

  function sendRow() {
    var start = performance.now();
    window.modeldeskConsole.showError("");
    $("busy").hidden = false;
    post([formRow()]).then(function (body) {
      window.modeldeskConsole.renderPrediction(body.predictions[0], body.latency_ms, performance.now() - start);
    }).catch(failed).then(function () { $("busy").hidden = true; });
  }

  // RFC 4180 CSV (quotes, doubled quotes, CR LF) -> arrays of cells; a BOM is dropped
  function parseCsv(text) {
    var rows = [], row = [], cell = "", quoted = false, i = 0;
    text = text.replace(/^\uFEFF/, "");
    for (; i < text.length; i++) {
      var c = text[i];
      if (quoted) {
        if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; }
        else if (c === '"') quoted = false;
        else cell += c;
      } else if (c === '"') quoted = true;
      else if (c === ",") { row.push(cell); cell = ""; }
      else if (c === "\n" || c === "\r") {
        if (c === "\r" && text[i + 1] === "\n") i++;
        row.push(cell); cell = ""; if (row.length > 1 || row[0] !== "") rows.push(row); row = [];
      } else cell += c;
    }
    row.push(cell);
    if (row.length > 1 || row[0] !== "") rows.push(row);
    return rows;
  }

  // a cell for a spreadsheet: quoted when needed, a leading = + - @ kept as text (no formula runs)
  function csvCell(value) {
    var text = value === null || value === undefined ? "" : String(value);
    if (/^[=+\-@]/.test(text) && !isFinite(Number(text))) text = "'" + text;
    return /[",\r\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  function answerColumns(prediction) {
    if (prediction.value !== undefined) return [["predicted", prediction.value]];
    return [["predicted", prediction.label], ["confidence", prediction.score]];
  }

  function answerCsv(file) {
    var meta = $("row-csv-meta");
    if (downloadUrl) { URL.revokeObjectURL(downloadUrl); downloadUrl = null; }
    $("row-download").hidden = true;
    window.modeldeskConsole.showError("");
    file.text().then(function (text) {
      var table = parseCsv(text);
      if (table.length < 2) throw new Error(file.name + ": no rows under the header row");
      var header = table[0], body = table.slice(1);
      var rows = body.map(function (cells) {
        var row = {};
        header.forEach(function (name, i) { if (cells[i] !== undefined && cells[i] !== "") row[name] = cells[i]; });
        return row;
      });
      var answers = [], done = 0;
      function next() {
        if (done >= rows.length) return Promise.resolve();
        var batch = rows.slice(done, done + BATCH);
        return post(batch).then(function (result) {
          answers = answers.concat(result.predictions);
          done += batch.length;
          meta.textContent = "Answered " + done + " of " + rows.length + " rows…";
          return next();
        });
      }
      $("busy").hidden = false;
      return next().then(function () {
        var extra = answerColumns(answers[0]).map(function (pair) { return pair[0]; });
        var lines = [header.concat(extra).map(csvCell).join(",")];
        body.forEach(function (cells, i) {
          var values = answerColumns(answers[i]).map(function (pair) { return pair[1]; });
          lines.push(header.map(function (_n, j) { return cells[j]; }).concat(values).map(csvCell).join(","));
        });
        downloadUrl = URL.createObjectURL(new Blob([lines.join("\r\n") + "\r\n"], { type: "text/csv" }));
        var link = $("row-download");
        link.href = downloadUrl;
        link.download = file.name.replace(/\.csv$/i, "") + "-answers.csv";
        link.hidden = false;
        meta.textContent = rows.length + " rows answered.";
      });
    }).catch(function (error) {
      meta.textContent = "";
      failed(error);
    }).then(function () { $("busy").hidden = true; });
  }

  $("row-send").addEventListener("click", sendRow);
  $("row-form").addEventListener("submit", function (e) { e.preventDefault(); sendRow(); });
  $("row-form").addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); sendRow(); } });
  $("row-csv").addEventListener("change", function (e) { if (e.target.files[0]) answerCsv(e.target.files[0]); e.target.value = ""; });
  window.modeldeskRows = { setColumns: setColumns, formRow: formRow, parseCsv: parseCsv, csvCell: csvCell };
})();
