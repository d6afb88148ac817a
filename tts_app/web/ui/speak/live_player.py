"""The page's low-latency live player: Web Audio fed from ``GET /live/{token}``.

The handler puts ``live_html`` in the page when a run starts; the head script sees the new token,
fetches the run's audio (float32 samples as the engine makes them) and schedules each piece
back to back on an AudioContext. Playback starts as early as it can without running dry: the
first piece (the first line's first window) is scheduled so that it ends ``data-gap`` seconds
after it arrived (when the first line's next window is due, predicted by ``expected_gap_s``), or
at once when it is longer than that. A piece that arrives late is played as soon as it comes, and
the gap is counted (``window.ttsLive.underruns``); the status line shows first sound (from the
click) and the gaps heard. The handler sends the audio once the engine says the stream is safe
(safe_start.py), so a loaded machine starts the player later rather than letting it stutter. The AudioContext is made in the Generate click, the
user gesture browsers require for sound.

``window.ttsLive.clock(run)`` is the take's clock for the captions; ``window.__ttsLiveTap(ctx,
node)``, when a page defines it, is called with the player's output node (the browser test records
what is played through it).
"""

from __future__ import annotations

import html

from tts_app.web.ui.speak.stream_pacer import MAX_PREBUFFER_S

LIVE_IDLE = '<div class="live-idle muted">The live stream plays here.</div>'
GAP_MARGIN = 1.5  # the next step may run this much slower than predicted before the player runs dry
# Added to the prediction: the hand-over to the browser and the work every side does at a run's first
# piece (page updates, the player's start), which the engine's step times do not see. In 20 browser runs
# on a 2-core machine, the browser among them, the first gap exceeded the prediction by at most 0.13 s.
START_ALLOWANCE_S = 0.25
UNKNOWN_GAP_S = 1.0  # before the engine has timed any step


def expected_gap_s(row_step_p90_s: float, rows: int, emits_rows: bool = False, rows_ahead: int = 0) -> float:
    """Seconds from the first line's first piece to its next one, from the slow end (90th percentile)
    of the engine's recent per-row step times (a row's full window).

    The engine gives the first line its first window alone and holds the run's later lines back a
    step (tts_app/engine/engine.py), so a backend that emits rows as they are decoded sends the first
    line's next window after its own full window and those of the ``rows_ahead`` rows already running
    (other visitors', stepped once after the first window and once before it); otherwise only when the
    whole next step, every row of the run included, is done.
    """
    if row_step_p90_s <= 0:
        return UNKNOWN_GAP_S
    row_steps = 1 + 2 * max(rows_ahead, 0) + (0 if emits_rows else max(rows, 1) - 1)
    return min(MAX_PREBUFFER_S, GAP_MARGIN * row_step_p90_s * row_steps + START_ALLOWANCE_S)


def live_html(token: str, sample_rate: int, gap_s: float, run_id: str) -> str:
    """The element the page's player starts on: its token, the sample rate, the expected wait for the
    second piece (seconds: ``expected_gap_s``) and the run id the captions carry too."""
    return (
        f'<div class="live" data-token="{html.escape(token)}" data-rate="{int(sample_rate)}" '
        f'data-gap="{gap_s:.3f}" data-run="{html.escape(run_id)}">'
        '<span class="live-dot"></span><span class="live-status">Starting…</span></div>'
    )


LIVE_PLAYER_SCRIPT = """<script>
(() => {
  const LEAD_S = 0.04;  // first piece: scheduled this far ahead of the context's clock
  const COALESCE_MS = 15;
  const live = window.ttsLive = {
    ctx: null, out: null, token: null, run: null, t0: null, next: 0, firstStart: null,
    underruns: [], arrivals: [], received: 0, done: false, ended: false, stopped: false, abort: null, sources: new Set(),
    clickAt: null, firstSoundS: null,
    make(rate) {
      if (this.ctx && (!rate || this.ctx.sampleRate === rate)) return;
      if (this.ctx) this.ctx.close();
      const Ctx = window.AudioContext || window.webkitAudioContext;
      try { this.ctx = new Ctx(rate ? { sampleRate: rate } : undefined); } catch (e) { this.ctx = new Ctx(); }
      this.out = this.ctx.createGain();
      this.out.connect(this.ctx.destination);
      if (window.__ttsLiveTap) window.__ttsLiveTap(this.ctx, this.out);
    },
    arm() {  // in the Generate click: browsers start sound only after a user gesture
      this.stopped = false;
      this.clickAt = performance.now();
      this.make(this.lastRate || 22050);
      if (this.ctx.state !== 'running') this.ctx.resume();
    },
    stop(byUser) {  // byUser: the Stop button (the player says so); else a new run replaces this one
      this.stopped = !!byUser;
      if (this.abort) this.abort.abort();
      for (const s of this.sources) { try { s.stop(); } catch (e) {} }
      this.sources.clear();
      this.abort = null; this.t0 = null; this.firstStart = null; this.done = false; this.ended = false;
      this.underruns = []; this.arrivals = []; this.received = 0; this.firstSoundS = null;
    },
    clock(run) {  // seconds of this run's take played so far (null: not this run, or not started)
      if (!this.ctx || run !== this.run || this.t0 === null) return null;
      return this.ctx.currentTime - this.t0;
    },
    schedule(samples, rate) {
      if (!samples.length) return;
      const buf = this.ctx.createBuffer(1, samples.length, rate);
      buf.copyToChannel(samples, 0);
      const src = this.ctx.createBufferSource();
      src.buffer = buf;
      src.connect(this.out);
      const now = this.ctx.currentTime;
      if (this.next < now + 0.005) {  // late: play it now; the take's clock moves with it
        const gap = now + LEAD_S - this.next;
        this.underruns.push([performance.now(), gap]);
        this.t0 += gap;
        this.next += gap;
      }
      src.start(this.next);
      this.next += buf.duration;
      this.sources.add(src);
      src.onended = () => this.sources.delete(src);
    },
    begin(pending, rate, delay) {
      this.t0 = this.ctx.currentTime + Math.max(LEAD_S, delay);
      this.next = this.t0;
      // The player's own figures, beside the server's: first sound from the click, and every gap heard.
      if (this.clickAt !== null) this.firstSoundS = (performance.now() - this.clickAt) / 1000 + Math.max(LEAD_S, delay);
      this.firstStart = this.t0;
      for (const p of pending) this.schedule(p, rate);
    },
    async start(el) {
      this.stop();
      const token = el.dataset.token, rate = +el.dataset.rate, gap = +el.dataset.gap;
      this.token = token; this.run = el.dataset.run; this.lastRate = rate;
      this.make(rate);
      if (this.ctx.state !== 'running') this.ctx.resume();
      const abort = this.abort = new AbortController();
      const pending = [];
      let carry = new Uint8Array(0);
      try {
        const reply = await fetch('/live/' + token, { signal: abort.signal, cache: 'no-store' });
        if (!reply.ok) throw new Error('live stream: HTTP ' + reply.status);
        const reader = reply.body.getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          const bytes = new Uint8Array(carry.length + value.length);
          bytes.set(carry); bytes.set(value, carry.length);
          const whole = bytes.length - (bytes.length % 4);
          carry = bytes.slice(whole);
          if (!whole) continue;
          const samples = new Float32Array(bytes.slice(0, whole).buffer);
          this.received += samples.length;
          this.arrivals.push([performance.now(), samples.length / rate]);
          if (this.t0 !== null) { this.schedule(samples, rate); continue; }
          pending.push(samples);
          if (pending.length === 1) {
            // One engine piece can come in several reads: take what lands within COALESCE_MS as the
            // first piece, then start so that it lasts until the next piece is due (gap after it came).
            const came = this.ctx.currentTime;
            setTimeout(() => {
              if (abort.signal.aborted || this.t0 !== null) return;
              const held = pending.reduce((n, p) => n + p.length, 0) / rate;
              this.begin(pending.splice(0), rate, came + gap - held - this.ctx.currentTime);
            }, COALESCE_MS);
          }
        }
        if (this.t0 === null && pending.length) this.begin(pending.splice(0), rate, 0);
        this.done = true;
      } catch (err) {
        if (abort.signal.aborted) return;
        console.log('live player: ' + err);
        this.done = true;
      }
    },
  };
  const show = () => {
    const el = document.querySelector('#live-player .live[data-token]');
    if (!el) return;
    if (el.dataset.token !== live.token) {
      // A run whose player appears after Stop (the click came before this tick started it) never starts.
      if (!live.stopped) { live.start(el); return; }
      live.token = el.dataset.token;
    }
    const status = el.querySelector('.live-status');
    if (!status || !live.ctx) return;
    const t = live.clock(live.run);
    if (live.stopped) { status.textContent = 'Stopped'; el.classList.add('ended'); return; }
    if (t === null) { status.textContent = live.done ? 'No audio' : 'Buffering…'; return; }
    if (live.done && live.ctx.currentTime >= live.next) { live.ended = true; el.classList.add('ended'); }
    const s = Math.max(0, Math.min(t, live.next - live.t0));
    const gaps = live.underruns.length, gapS = live.underruns.reduce((n, u) => n + u[1], 0);
    const heard = (live.firstSoundS === null ? '' : ' · first sound ' + live.firstSoundS.toFixed(2) + ' s')
      + (gaps ? ' · ' + gaps + (gaps === 1 ? ' gap, ' : ' gaps, ') + gapS.toFixed(2) + ' s' : live.ended ? ' · no gaps' : '');
    status.textContent = (live.ended ? 'Played ' : 'Playing ') + Math.floor(s / 60) + ':' + String(Math.floor(s % 60)).padStart(2, '0') + heard;
  };
  setInterval(show, 20);
  document.addEventListener('click', (event) => {
    const target = event.target;
    if (!target || !target.closest) return;
    if (target.closest('#generate-btn')) live.arm();
    else if (target.closest('#stop-btn')) live.stop(true);
  }, true);
})();
</script>"""
