/**
 * The inputs of SQL fragments that other SQL splices in. A fragment names
 * its own tables and aliases; what it reads from its caller's query it takes
 * as a typed argument, so the caller's names appear at the call and the
 * compiler checks their shape:
 *
 * - a value (`SqlValue`): a numbered, typed parameter (`$5::text`) or an
 *   alias-qualified column (`l.actor_id`), never a bare name that one of the
 *   fragment's own tables could capture;
 * - a table alias (`SqlAlias`): a literal identifier written at the call.
 *
 * A statement built from pieces numbers its parameters with `SqlParams`, so
 * no piece relies on another's `$n`.
 */

/** A numbered parameter with its type, as a statement's text spells it: `$5::text`. */
export type SqlParam = `$${number}::${string}`;
/** A column qualified by its table's alias: `r.id`. */
export type SqlColumn = `${string}.${string}`;
/** SQL giving one value from the caller's query. */
export type SqlValue = SqlParam | SqlColumn;

type NotInIdentifier = "." | " " | "\n" | "," | "(" | ")" | "'" | '"' | "$" | ":" | ";" | "=" | "-";

/**
 * A table alias, written as a string literal at the call (`"s"`): a computed
 * string, an empty one or one holding SQL (a dot, a space, a quote...) does
 * not compile. Use as `<A extends string>(alias: SqlAlias<A>)`.
 */
export type SqlAlias<A extends string> = A &
  (string extends A ? never : A extends "" | `${string}${NotInIdentifier}${string}` ? never : unknown);

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** A plain lowercase identifier (an alias, a CTE or column name), checked at run time: the compiler checks literals only. */
export function checkedIdentifier(name: string): string {
  if (!IDENTIFIER.test(name)) throw new Error(`not a plain SQL identifier: ${JSON.stringify(name)}`);
  return name;
}

/**
 * The value, refused when it is qualified by one of the fragment's own
 * aliases (`inner`): inside the fragment that alias names the fragment's
 * table, not the caller's.
 */
export function outerValue<V extends SqlValue>(value: V, ...inner: string[]): V {
  for (const alias of inner) {
    if (value.startsWith(`${alias}.`)) throw new Error(`${value} would name the fragment's own ${alias}; alias the outer table otherwise`);
  }
  return value;
}

/**
 * A statement's parameters, numbered as they are added: `add` returns the
 * placeholder to write (`$4::uuid`), and `values` is what to send with the
 * text. A statement built from several pieces passes one SqlParams through
 * them, so each piece writes the numbers it was given.
 */
export class SqlParams {
  readonly values: unknown[] = [];

  add<T extends string>(value: unknown, type: T): `$${number}::${T}` {
    this.values.push(value);
    return `$${this.values.length}::${type}`;
  }
}
