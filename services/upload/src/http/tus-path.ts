/** Resumable uploads (tus 1.0.0, CONTRACT §12) below `{upload}`. */
export const TUS_PATH = '/api/v1/uploads/tus';
