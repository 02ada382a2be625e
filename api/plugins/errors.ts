import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { isDatabaseUnavailable, isUniqueViolation } from "../../lib/db.js";
import { isPartnerUrl } from "../../lib/partners.js";
import { problemBody, ProblemError, problems, ProblemSlug, type ValidationIssue } from "../../lib/problems.js";

export function sendProblem(reply: FastifyReply, baseUrl: string, problem: ProblemError): FastifyReply {
  reply.headers(problem.headers);
  const body = problemBody(baseUrl, problem);
  // ASM3's publisher reads an error's text from `message` (contract part 4): under /partners it carries the detail too.
  if (isPartnerUrl(reply.request.url)) body.message = body.detail;
  return reply.code(problem.status).type("application/problem+json").serializer(JSON.stringify).send(body);
}

// Postgres data exceptions that only malformed input can cause.
const dataExceptionCodes = new Set(["22P02", "22003", "22007", "22008", "22023", "22001", "54000"]);
// Text Postgres cannot store: NUL (\u0000) in a text column (22021) or a jsonb value (22P05). Such input is
// refused, not silently stripped, so what is stored is always exactly what the caller sent.
const unstorableTextCodes = new Set(["22021", "22P05"]);

/** Maps any thrown error to the contract's problem+json; 5xx details stay in the log. */
export function toProblem(err: unknown, bodyLimit: number): ProblemError {
  if (err instanceof ProblemError) return err;
  if (hasZodFastifySchemaValidationErrors(err)) {
    const errors: ValidationIssue[] = err.validation.map((v) => ({
      path: `${err.validationContext ?? "body"}${v.instancePath.replaceAll("/", ".")}`.replace(/\.$/, ""),
      message: v.message ?? "is invalid",
    }));
    const first = errors[0];
    return problems.validation(first ? `${first.path}: ${first.message}` : "request is invalid", errors);
  }
  const fastifyErr = err as FastifyError;
  switch (fastifyErr.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return problems.payloadTooLarge(bodyLimit);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return problems.unsupportedMediaType();
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return problems.validation("request body is empty but content-type is application/json");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return problems.validation("request body is not valid JSON");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return problems.validation("content-length does not match the body");
  }
  if (fastifyErr instanceof SyntaxError && fastifyErr.statusCode === 400) {
    return problems.validation("request body is not valid JSON");
  }
  if (isDatabaseUnavailable(err)) return problems.unavailable();
  if (isUniqueViolation(err)) return problems.conflict("this resource already exists");
  const pgCode = (err as { code?: string }).code;
  if (pgCode && unstorableTextCodes.has(pgCode)) {
    return problems.validation("a text value contains a character that cannot be stored, such as NUL (\\u0000)");
  }
  if (pgCode && dataExceptionCodes.has(pgCode)) return problems.validation("a value is out of range or malformed");
  if (fastifyErr.statusCode && fastifyErr.statusCode >= 400 && fastifyErr.statusCode < 500) {
    return problems.validation("request is invalid");
  }
  return problems.internal();
}

/** A last look at a refusal before it is sent: auth.ts's suspensionBeforeRefusal. */
export type RefusalCheck = (request: FastifyRequest, refusal: ProblemError) => Promise<ProblemError>;

export function registerErrorHandling(app: FastifyInstance, baseUrl: string, bodyLimit: number, checkRefusal?: RefusalCheck): void {
  app.setErrorHandler(async (err, request, reply) => {
    const refusal = toProblem(err, bodyLimit);
    const problem = checkRefusal ? await checkRefusal(request, refusal) : refusal;
    if (problem.status >= 500) {
      request.log.error({ err }, "request failed");
    } else if (problem.slug !== ProblemSlug.ValidationFailed) {
      request.log.info({ problem: problem.slug }, "request refused");
    }
    return sendProblem(reply, baseUrl, problem);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, baseUrl, problems.notFound(`route ${request.method} ${request.url.split("?")[0]}`)),
  );
}

/** Errors Node's HTTP parser answers before Fastify sees a request, so no route or error handler runs for them. */
const clientErrorProblems: Record<string, () => ProblemError> = {
  HPE_HEADER_OVERFLOW: problems.requestHeaderFieldsTooLarge,
  ERR_HTTP_REQUEST_TIMEOUT: () => problems.requestTimeout(),
};

/**
 * Fastify's `clientErrorHandler`: a request Node cannot parse (a malformed
 * request line, headers over the size limit, a timeout) is answered with
 * problem+json like every other error, written to the raw socket because no
 * request or reply exists yet.
 */
export function clientErrorHandler(baseUrl: string) {
  return function (this: FastifyInstance | undefined, err: ConnectionError, socket: Socket): void {
    // A reset connection has no one left to answer.
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    const known = err.code ? clientErrorProblems[err.code] : undefined;
    const body = problemBody(baseUrl, known ? known() : problems.validation("the request is malformed"));
    this?.log.debug({ err, status: body.status }, "client error");
    const json = JSON.stringify(body);
    if (!socket.writable) return void socket.destroy();
    socket.end(
      `HTTP/1.1 ${body.status} ${STATUS_CODES[body.status]}\r\n` +
        `Content-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
      () => socket.destroy(),
    );
  };
}
