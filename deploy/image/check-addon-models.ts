/**
 * build-local.sh's check that the addon's models load from the image's pruned node_modules, as the addon loads them:
 * Human's objects and faces on tfjs WASM, ISNet "medium" on onnxruntime-node's CPU build, each run once on a tiny
 * image. Compiled like the services (deploy/image/build-js.mjs --entry) into deploy/image/dist/, which build-local.sh
 * mounts at the same place under /app: the image has no TypeScript loader.
 */
import { BackgroundRemoval } from '../../services/addon/src/adapters/background-removal';
import { HumanModels } from '../../services/addon/src/adapters/human-models';

async function main(): Promise<void> {
  const loads = [
    ['human objects', () => HumanModels.load('objects')],
    ['human faces', () => HumanModels.load('faces')],
    ['background removal', () => BackgroundRemoval.load('medium')],
  ] as const;
  for (const [what, load] of loads) {
    const started = Date.now();
    await load();
    console.log(`${what} loaded in ${Date.now() - started} ms`);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
