import { readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { ANALYSIS_SIDE, type DetectedFace, type DetectedObject, type VisionModels } from '../domain/ports';

/** The part of `@vladmandic/human` used here (its typings come with the ESM build, this loads the CommonJS one). */
interface HumanLike {
  tf: {
    io: { registerLoadRouter(router: (url: string | string[]) => unknown): void };
    tensor4d(values: Int32Array, shape: [number, number, number, number], dtype: 'int32'): { dispose(): void };
    dispose(t: unknown): void;
  };
  load(): Promise<void>;
  detect(input: unknown): Promise<{
    object: Array<{ label: string; score: number }>;
    face: Array<{ box: [number, number, number, number]; score: number; embedding?: number[] }>;
    error?: string | null;
  }>;
}

const humanDir = path.dirname(path.dirname(require.resolve('@vladmandic/human')));
const MODELS = path.join(humanDir, 'models');
const WASM = `${path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'))}/dist/`;

/**
 * tfjs reads models by URL; without tfjs-node it has no `file://` loader, so models are read from the package's own
 * files here (nothing is fetched from the network).
 */
let fileLoaderRegistered = false;
function registerFileLoader(human: HumanLike): void {
  // One registry per process (every Human instance shares tfjs): a second router would make loads ambiguous.
  if (fileLoaderRegistered) return;
  fileLoaderRegistered = true;
  human.tf.io.registerLoadRouter((url) => {
    const u = Array.isArray(url) ? url[0] : url;
    if (typeof u !== 'string' || !u.startsWith('file://')) return null;
    const file = u.slice('file://'.length);
    return {
      load: async () => {
        const model = JSON.parse(await readFile(file, 'utf8')) as {
          modelTopology: unknown;
          format?: string;
          signature?: unknown;
          userDefinedMetadata?: unknown;
          weightsManifest: Array<{ paths: string[]; weights: unknown[] }>;
        };
        const specs = model.weightsManifest.flatMap((g) => g.weights);
        const parts = await Promise.all(model.weightsManifest.flatMap((g) => g.paths).map((p) => readFile(path.join(path.dirname(file), p))));
        const weights = Buffer.concat(parts);
        return {
          modelTopology: model.modelTopology,
          format: model.format,
          signature: model.signature,
          userDefinedMetadata: model.userDefinedMetadata,
          weightSpecs: specs,
          weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
        };
      },
    };
  });
}

type Kind = 'objects' | 'faces';

/** The picture the models are warmed up on: a person (public domain, NASA; see assets/README.md). */
const WARM_UP_PICTURE = path.join(__dirname, '..', '..', 'assets', 'warm-up.jpg');
/**
 * Detections run at start, on the warm-up picture at the size jobs are analysed at. The first compiles the kernels
 * (about 400 ms more); the next ones still got faster for a while: with one run on a blank 256-pixel square, the
 * first tagging benchmark after a start measured a p50 of 228-253 ms, with these five 212-226 (docs/benchmarks.md).
 */
const WARM_UP_RUNS = 5;

/**
 * The models that ship inside `@vladmandic/human`, on the tfjs WASM backend (CPU, no native download): COCO-80
 * objects (CenterNet), or faces (BlazeFace, FaceMesh, FaceRes embeddings). Loaded once; runs one image at a time.
 */
export class HumanModels implements VisionModels {
  private queue: Promise<unknown> = Promise.resolve();
  /** The last image's pixels as int32, the input type the models take (runs are one at a time: see `queue`). */
  private pixels = new Int32Array(0);

  private constructor(private readonly human: HumanLike) {}

  static async load(kind: Kind): Promise<HumanModels> {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the package's exports map lacks this build
    const { Human } = require(path.join(humanDir, 'dist', 'human.node-wasm.js')) as { Human: new (config: unknown) => HumanLike };
    const off = { enabled: false };
    const human = new Human({
      backend: 'wasm',
      wasmPath: WASM,
      modelBasePath: `file://${MODELS}/`,
      cacheModels: false,
      debug: false,
      async: false,
      warmup: 'none',
      cacheSensitivity: 0,
      filter: off,
      gesture: off,
      body: off,
      hand: off,
      segmentation: off,
      object: kind === 'objects' ? { enabled: true, modelPath: 'centernet.json', minConfidence: 0.1, maxDetected: 20 } : off,
      face:
        kind === 'faces'
          ? {
              enabled: true,
              detector: { modelPath: 'blazeface.json', rotation: false, maxDetected: 20, minConfidence: 0.2, skipFrames: 0, skipTime: 0, return: false },
              mesh: { enabled: true, modelPath: 'facemesh.json' },
              description: { enabled: true, modelPath: 'faceres.json' },
              iris: off,
              emotion: off,
              antispoof: off,
              liveness: off,
            }
          : off,
    });
    registerFileLoader(human);
    await human.load();
    const models = new HumanModels(human);
    // Warmed up on a real picture at the size jobs are analysed at (a face runs the mesh and description models
    // too), paid here at start rather than by the first jobs.
    const { data, info } = await sharp(WARM_UP_PICTURE)
      .resize(ANALYSIS_SIDE, Math.round((ANALYSIS_SIDE * 2) / 3), { fit: 'cover' })
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    for (let run = 0; run < WARM_UP_RUNS; run++) await models.run(data, info.width, info.height, () => undefined);
    return models;
  }

  private run<T>(rgb: Buffer, width: number, height: number, pick: (r: Awaited<ReturnType<HumanLike['detect']>>) => T): Promise<T> {
    const run = this.queue.then(async () => {
      // tfjs would convert the bytes into a new Int32Array (4 bytes a value, 8 MB at the analysis size) per image; one
      // buffer, kept and grown as needed, takes them instead (tfjs copies it into WASM memory and keeps no reference).
      if (this.pixels.length < rgb.length) this.pixels = new Int32Array(rgb.length);
      const pixels = this.pixels.subarray(0, rgb.length);
      pixels.set(rgb);
      const tensor = this.human.tf.tensor4d(pixels, [1, height, width, 3], 'int32');
      try {
        const result = await this.human.detect(tensor);
        if (result.error) throw new Error(result.error);
        return pick(result);
      } finally {
        this.human.tf.dispose(tensor);
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Objects in an RGB image (raw bytes, 3 channels). */
  objects(rgb: Buffer, width: number, height: number): Promise<DetectedObject[]> {
    return this.run(rgb, width, height, (r) => r.object.map((o) => ({ label: o.label, score: o.score })));
  }

  /** Faces with their embeddings (faces too small to describe are left out). */
  faces(rgb: Buffer, width: number, height: number): Promise<DetectedFace[]> {
    return this.run(rgb, width, height, (r) =>
      r.face
        .filter((f) => Array.isArray(f.embedding) && f.embedding.length > 0)
        .map((f) => ({ box: f.box, score: f.score, embedding: [...(f.embedding as number[])] })),
    );
  }
}
