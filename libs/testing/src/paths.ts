import path from 'node:path';

/** Repository root: libs/testing/src -> ../../.. */
export const repoRoot = path.resolve(__dirname, '..', '..', '..');
export const infraScript = (name: string): string => path.join(repoRoot, 'deploy', 'infra', name);
