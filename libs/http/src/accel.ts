/**
 * Internal redirect of object bytes (as web servers' X-Accel-Redirect): the gateway tells the owning service it can
 * stream an object itself; the service, having checked the caller, answers with its headers, an empty body and a
 * short-lived presigned URL of the object, and the gateway streams the bytes from the object store straight to the
 * client. One hop less for every download. The gateway strips these headers from clients' requests and from
 * answers it passes on.
 */
export const ACCEL = {
  /** On a request the gateway forwards: `s3` when it can stream from the object store. */
  request: 'x-dam-accel',
  /** On the service's answer: the presigned URL of the object to stream. */
  redirect: 'x-dam-accel-redirect',
  /** On the service's answer: the length of the body the client gets (its own Content-Length is 0). */
  length: 'x-dam-accel-length',
} as const;
