/**
 * What the addon's use cases need from the outside, as interfaces: the models, the originals, the group's people.
 * The adapters (adapters/) implement them; main.ts wires them in; tests may give in-memory ones.
 */

/** The side the vision models analyse at: images are scaled down to fit it (never up). */
export const ANALYSIS_SIDE = 1024;

/** One object the detector found, COCO-80 label and score (0-1). */
export interface DetectedObject {
  label: string;
  score: number;
}

/** One face: its box in the analysed image's pixels `[x, y, width, height]`, score and embedding (1024 numbers). */
export interface DetectedFace {
  box: [number, number, number, number];
  score: number;
  embedding: number[];
}

/** A vision model set (the object detector, or the face models): raw RGB pixels in, findings out. */
export interface VisionModels {
  objects(rgb: Buffer, width: number, height: number): Promise<DetectedObject[]>;
  faces(rgb: Buffer, width: number, height: number): Promise<DetectedFace[]>;
}

/** The background model: RGBA pixels in, the subject's mask (one byte per pixel, same size) out. */
export interface BackgroundRemover {
  mask(rgba: Buffer, width: number, height: number): Promise<Buffer>;
}

/** An original to analyse: its bytes when small, else the path of a file it was copied to. */
export interface Original {
  /** What sharp reads: libvips reads a file row by row, where a Buffer (or a stream, which sharp collects) is whole. */
  input: Buffer | string;
  /** Removes the file, if one was made. */
  release(): Promise<void>;
}

/** An original larger than an addon reads: the job fails with the reason, unread. */
export class OriginalTooLarge extends Error {}

/** Who each face is: the group's people, clustered as faces arrive (a person id per embedding, in order). */
export interface People {
  assign(input: { groupId: number; assetId: string; checksum: string; embeddings: number[][]; threshold: number }): Promise<string[]>;
}
