import { inflateSync } from 'node:zlib';

/** A decoded PNG: 8-bit RGBA, row after row. */
export interface Image {
  width: number;
  height: number;
  rgba: Uint8Array;
}

/** Decodes what a browser's screenshot writes: 8-bit RGB or RGBA, not interlaced. */
export function decodePng(file: Buffer): Image {
  if (file.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  for (let at = 8; at < file.length; ) {
    const length = file.readUInt32BE(at);
    const type = file.toString('latin1', at + 4, at + 8);
    const body = file.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const depth = body[8];
      const color = body[9];
      if (depth !== 8 || (color !== 2 && color !== 6) || body[12] !== 0)
        throw new Error(`unsupported PNG: depth ${depth}, color type ${color}, interlace ${body[12]}`);
      channels = color === 6 ? 4 : 3;
    } else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') break;
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const out = new Uint8Array(width * height * 4);
  let prev = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const cur = new Uint8Array(stride);
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? (cur[i - channels] as number) : 0;
      const b = prev[i] as number;
      const c = i >= channels ? (prev[i - channels] as number) : 0;
      const x = line[i] as number;
      let v: number;
      if (filter === 0) v = x;
      else if (filter === 1) v = x + a;
      else if (filter === 2) v = x + b;
      else if (filter === 3) v = x + ((a + b) >> 1);
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v = x + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
      } else throw new Error(`bad PNG filter ${filter}`);
      cur[i] = v & 0xff;
    }
    for (let px = 0; px < width; px++) {
      out.set(cur.subarray(px * channels, px * channels + 3), (y * width + px) * 4);
      out[(y * width + px) * 4 + 3] = channels === 4 ? (cur[px * channels + 3] as number) : 255;
    }
    prev = cur;
  }
  return { width, height, rgba: out };
}

/** The colour at (x, y) as `#rrggbb`. */
export function pixel(img: Image, x: number, y: number): string {
  const i = (Math.round(y) * img.width + Math.round(x)) * 4;
  return `#${[0, 1, 2].map((k) => (img.rgba[i + k] as number).toString(16).padStart(2, '0')).join('')}`;
}

/** Whether two `#rrggbb` colours are within `tolerance` per channel. */
export function near(a: string, b: string, tolerance = 6): boolean {
  for (let k = 1; k < 7; k += 2) {
    if (Math.abs(Number.parseInt(a.slice(k, k + 2), 16) - Number.parseInt(b.slice(k, k + 2), 16)) > tolerance)
      return false;
  }
  return true;
}
