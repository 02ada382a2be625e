import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ProblemError } from "../../lib/problems.js";
import { prefersHtml } from "../negotiate.js";
import { sendProblem, toProblem } from "../plugins/errors.js";

/**
 * The error handler of a plugin of HTML pages (the tag page, the share
 * pages): a browser gets `sendPage`'s page in its language, with the
 * problem's status and headers; an API client (the test matrix, curl) the
 * usual problem+json.
 */
export function setPageErrorHandler(
  app: FastifyInstance,
  config: { API_BODY_LIMIT_BYTES: number; PROBLEM_BASE_URL: string },
  sendPage: (request: FastifyRequest, reply: FastifyReply, problem: ProblemError) => FastifyReply,
): void {
  app.setErrorHandler((err, request, reply) => {
    const problem = toProblem(err, config.API_BODY_LIMIT_BYTES);
    if (problem.status >= 500) request.log.error({ err }, "request failed");
    else request.log.info({ problem: problem.slug }, "request refused");
    if (!prefersHtml(request.headers.accept)) return sendProblem(reply, config.PROBLEM_BASE_URL, problem);
    return sendPage(request, reply.headers(problem.headers).code(problem.status), problem);
  });
}
