/** Animal vocabulary shared by the API's schemas and the event catalogue. */
export const SPECIES = ["dog", "cat", "bird", "rabbit", "other"] as const;
export type Species = (typeof SPECIES)[number];

export const REPORT_OUTCOMES = ["reunited", "closed"] as const;
export type ReportOutcome = (typeof REPORT_OUTCOMES)[number];
