import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from "node:http";

export interface PartialAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** Request body bytes written before the answer arrived. */
  bytesSent: number;
}

export interface PartialUpload {
  answer: Promise<PartialAnswer>;
  /** The client side of the socket, to abort the upload as a client going away would. */
  request: ClientRequest;
}

/**
 * Starts an upload over a real socket to 127.0.0.1:port and writes only
 * `prefix` and then `send` bytes of filler, never finishing: an answer can
 * only arrive if the server decided without reading the whole body.
 */
export function startPartialUpload(
  port: number,
  path: string,
  headers: Record<string, string>,
  send: number,
  prefix: Buffer = Buffer.alloc(0),
): PartialUpload {
  let settle: { resolve: (a: PartialAnswer) => void; reject: (e: unknown) => void };
  const answer = new Promise<PartialAnswer>((resolve, reject) => (settle = { resolve, reject }));
  let bytesSent = 0;
  const req = httpRequest({ host: "127.0.0.1", port, method: "POST", path, headers }, (res) => {
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => (body += chunk));
    res.on("end", () => {
      settle.resolve({ status: res.statusCode!, headers: res.headers, body, bytesSent });
      req.destroy();
    });
  });
  req.on("error", (err) => {
    // The server may close the socket while we are still writing; the answer has been read by then.
    if (!req.destroyed) settle.reject(err);
  });
  req.write(prefix);
  const chunk = Buffer.alloc(16 * 1024, "a");
  const pump = () => {
    while (bytesSent < send) {
      bytesSent += chunk.length;
      if (!req.write(chunk)) return void req.once("drain", pump);
    }
  };
  pump();
  return { answer, request: req };
}

export const partialUpload = (port: number, path: string, headers: Record<string, string>, send: number): Promise<PartialAnswer> =>
  startPartialUpload(port, path, headers, send).answer;
