// Audio (player + waveform) and video (player) views; nothing downloads until on screen.
import { apiKey, type MediaItem } from "./api";
import { mediaSrc } from "./media";
import { caption, stepped, whenVisible } from "./media_common";
import { cssVar, fmtNum, h } from "./util";

export function audioView(list: MediaItem[]): HTMLElement {
  return stepped(list, "audio", (it) => {
    const src = mediaSrc(it);
    const audio = h("audio", { controls: true, preload: "none", class: "media-audio" });
    const wave = h("canvas", { class: "waveform", width: 480, height: 64, role: "img", "aria-label": "waveform" });
    const info = [it.sample_rate ? `${fmtNum(it.sample_rate)} Hz` : "", it.channels ? `${String(it.channels)} ch` : "", typeof it.duration === "number" ? `${it.duration.toFixed(2)} s` : ""].filter(Boolean).join(" · ");
    const fig = h("figure", { "data-step": it.step, class: "media-av" }, wave, audio, caption(it), h("div", { class: "small muted" }, info));
    whenVisible(fig, () => {
      if (src) void load(src, audio, wave);
    });
    return fig;
  });
}

/** One download per clip: the bytes feed both the player (a blob URL) and the waveform. */
async function load(src: string, audio: HTMLAudioElement, wave: HTMLCanvasElement): Promise<void> {
  let buf: ArrayBuffer;
  try {
    const res = await fetch(src, { headers: apiKey() ? { Authorization: `Bearer ${apiKey()}` } : {} });
    if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
    buf = await res.arrayBuffer();
  } catch (e) {
    wave.dataset.error = (e as Error).message;
    audio.src = src; // let the player try on its own
    return;
  }
  audio.src = URL.createObjectURL(new Blob([buf], { type: mimeOf(src) }));
  audio.preload = "metadata";
  await drawWave(buf.slice(0), wave); // decodeAudioData detaches the buffer it is given
}

function mimeOf(src: string): string {
  const ext = /\.([a-z0-9]+)$/i.exec(src)?.[1]?.toLowerCase() ?? "";
  return { wav: "audio/wav", mp3: "audio/mpeg", ogg: "audio/ogg", oga: "audio/ogg", opus: "audio/ogg", flac: "audio/flac", m4a: "audio/mp4" }[ext] ?? "";
}

async function drawWave(buf: ArrayBuffer, canvas: HTMLCanvasElement): Promise<void> {
  try {
    const ctx = new OfflineAudioContext(1, 1, 44100);
    const audio = await ctx.decodeAudioData(buf);
    const data = audio.getChannelData(0);
    const g = canvas.getContext("2d")!;
    const W = canvas.width;
    const H = canvas.height;
    g.clearRect(0, 0, W, H);
    g.fillStyle = cssVar("--accent") || "#1f77b4";
    const per = Math.max(1, Math.floor(data.length / W));
    for (let x = 0; x < W; x++) {
      let lo = 0;
      let hi = 0;
      const end = Math.min(data.length, (x + 1) * per);
      for (let i = x * per; i < end; i++) {
        const v = data[i];
        if (v < lo) lo = v;
        else if (v > hi) hi = v;
      }
      const y0 = ((1 - hi) / 2) * H;
      const y1 = ((1 - lo) / 2) * H;
      g.fillRect(x, y0, 1, Math.max(1, y1 - y0));
    }
    canvas.dataset.drawn = "1";
  } catch (e) {
    canvas.dataset.error = String((e as Error).message);
  }
}

export function videoView(list: MediaItem[]): HTMLElement {
  return stepped(list, "video", (it) => {
    const src = mediaSrc(it);
    const w = Number(it.width) || null;
    const hh = Number(it.height) || null;
    const scale = w && hh ? Math.max(1, Math.min(4, Math.floor(256 / Math.max(w, hh)))) : 1;
    const size = { width: w ? w * scale : null, height: hh ? hh * scale : null };
    const el =
      it.format === "gif"
        ? h("img", { class: "media-video media-img", alt: String(it.caption ?? `${it.key} step ${it.step}`), ...size })
        : h("video", { class: "media-video", controls: true, loop: true, muted: true, playsinline: true, preload: "none", ...size });
    const fig = h("figure", { "data-step": it.step, class: "media-av" }, el, caption(it), h("div", { class: "small muted" }, [it.frames ? `${String(it.frames)} frames` : "", it.fps ? `${fmtNum(it.fps)} fps` : ""].filter(Boolean).join(" · ")));
    whenVisible(fig, () => {
      if (!src) return;
      if (el instanceof HTMLVideoElement) {
        el.muted = true;
        el.preload = "metadata";
      }
      el.src = src;
    });
    return fig;
  });
}
