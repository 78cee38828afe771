// three.js rendering of wisp.points clouds and .obj/.stl/.glb/.gltf files (lazy chunk).
// wisp.points (docs/run-file.md): "WPTS", u8 version, u8 flags (1 = RGB, 2 = categories),
// u16 0, u32 N, u32 0, f32[3N] positions, then u16[N] categories, then u8[3N] colours.
import * as THREE from "three";
import { OrbitControls } from "three/examples/jsm/controls/OrbitControls.js";
import { GLTFLoader } from "three/examples/jsm/loaders/GLTFLoader.js";
import { OBJLoader } from "three/examples/jsm/loaders/OBJLoader.js";
import { STLLoader } from "three/examples/jsm/loaders/STLLoader.js";

const PALETTE = [0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf];

export function parsePoints(buf: ArrayBuffer): THREE.BufferGeometry {
  const head = new DataView(buf, 0, 16);
  const magic = String.fromCharCode(head.getUint8(0), head.getUint8(1), head.getUint8(2), head.getUint8(3));
  if (magic !== "WPTS" || head.getUint8(4) !== 1) throw new Error("not a wisp.points v1 file");
  const flags = head.getUint8(5);
  const n = head.getUint32(8, true);
  let off = 16;
  const pos = new Float32Array(buf, off, 3 * n);
  off += 12 * n;
  const geo = new THREE.BufferGeometry();
  geo.setAttribute("position", new THREE.BufferAttribute(pos, 3));
  let colors: Float32Array | null = null;
  if (flags & 2) {
    const cat = new Uint16Array(buf, off, n);
    off += 2 * n;
    colors = new Float32Array(3 * n);
    const c = new THREE.Color();
    for (let i = 0; i < n; i++) {
      c.setHex(PALETTE[cat[i] % PALETTE.length]);
      colors[3 * i] = c.r;
      colors[3 * i + 1] = c.g;
      colors[3 * i + 2] = c.b;
    }
  }
  if (flags & 1) {
    const rgb = new Uint8Array(buf, off, 3 * n);
    // logged colours are sRGB; three.js works in linear light and converts back on output
    const lut = new Float32Array(256).map((_, v) => (v / 255 < 0.04045 ? v / 255 / 12.92 : Math.pow((v / 255 + 0.055) / 1.055, 2.4)));
    colors = new Float32Array(3 * n);
    for (let i = 0; i < 3 * n; i++) colors[i] = lut[rgb[i]];
  }
  if (colors) geo.setAttribute("color", new THREE.BufferAttribute(colors, 3));
  if (n > LOD) shuffle(geo, n);
  return geo;
}

/** Points drawn while the camera moves: a random subset (the first LOD points after a
 * shuffle), so big clouds stay interactive; the whole cloud is drawn when it stops. */
const LOD = 120_000;

function shuffle(geo: THREE.BufferGeometry, n: number): void {
  const pos = geo.getAttribute("position").array as Float32Array;
  const col = geo.getAttribute("color")?.array as Float32Array | undefined;
  const p = new Float32Array(pos);
  const c = col ? new Float32Array(col) : null;
  let seed = 0x9e3779b9;
  for (let i = n - 1; i > 0; i--) {
    seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    const j = seed % (i + 1);
    for (let k = 0; k < 3; k++) {
      const a = p[3 * i + k];
      p[3 * i + k] = p[3 * j + k];
      p[3 * j + k] = a;
      if (c) {
        const b = c[3 * i + k];
        c[3 * i + k] = c[3 * j + k];
        c[3 * j + k] = b;
      }
    }
  }
  geo.setAttribute("position", new THREE.BufferAttribute(p, 3));
  if (c) geo.setAttribute("color", new THREE.BufferAttribute(c, 3));
}

function meshOf(format: string, buf: ArrayBuffer): Promise<THREE.Object3D> {
  const mat = new THREE.MeshStandardMaterial({ color: 0x8899aa, flatShading: true });
  if (format === "stl") return Promise.resolve(new THREE.Mesh(new STLLoader().parse(buf), mat));
  if (format === "obj") {
    const obj = new OBJLoader().parse(new TextDecoder().decode(buf));
    obj.traverse((o) => {
      if (o instanceof THREE.Mesh) o.material = mat;
    });
    return Promise.resolve(obj);
  }
  if (format === "glb" || format === "gltf") {
    return new Promise((resolve, reject) => new GLTFLoader().parse(buf, "", (g) => resolve(g.scene), reject));
  }
  return Promise.reject(new Error(`unknown 3-D format ${format}`));
}

export function render(box: HTMLElement, format: string, buf: ArrayBuffer): void {
  const width = box.clientWidth || 480;
  const height = 360;
  const renderer = new THREE.WebGLRenderer({ antialias: false, preserveDrawingBuffer: true });
  renderer.setPixelRatio(Math.min(2, window.devicePixelRatio || 1));
  renderer.setSize(width, height);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0x111318);
  const camera = new THREE.PerspectiveCamera(50, width / height, 0.001, 1e7);
  const controls = new OrbitControls(camera, renderer.domElement);
  const draw = () => renderer.render(scene, camera);
  controls.addEventListener("change", draw);
  box.replaceChildren(renderer.domElement);
  const frame = (obj: THREE.Object3D) => {
    scene.add(obj);
    const bounds = new THREE.Box3().setFromObject(obj);
    const sphere = bounds.getBoundingSphere(new THREE.Sphere());
    const r = sphere.radius || 1;
    camera.position.copy(sphere.center).add(new THREE.Vector3(r * 1.2, r * 0.9, r * 1.6));
    camera.near = r / 1000;
    camera.far = r * 100;
    camera.updateProjectionMatrix();
    controls.target.copy(sphere.center);
    controls.update();
    draw();
    box.dataset.drawn = "1";
  };
  if (format === "points") {
    const geo = parsePoints(buf);
    geo.computeBoundingSphere();
    const r = geo.boundingSphere?.radius || 1;
    const n = geo.getAttribute("position").count;
    // one draw call for the whole cloud keeps 1M points interactive
    const mat = new THREE.PointsMaterial({ size: (r / Math.sqrt(Math.max(1, n))) * 4, vertexColors: !!geo.getAttribute("color"), color: geo.getAttribute("color") ? 0xffffff : 0x7fb3ff, sizeAttenuation: true });
    box.dataset.points = String(n);
    if (n > LOD) {
      controls.addEventListener("start", () => geo.setDrawRange(0, LOD));
      controls.addEventListener("end", () => {
        geo.setDrawRange(0, Infinity);
        draw();
      });
    }
    frame(new THREE.Points(geo, mat));
    return;
  }
  scene.add(new THREE.HemisphereLight(0xffffff, 0x444444, 2.5));
  const sun = new THREE.DirectionalLight(0xffffff, 1.5);
  sun.position.set(1, 2, 3);
  scene.add(sun);
  void meshOf(format, buf).then(frame, (e: Error) => {
    box.dataset.error = e.message;
  });
}
