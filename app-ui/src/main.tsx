import { render } from "preact";
import { App } from "./app";
import { registerWorker } from "./push";
import "./styles.css";

render(<App />, document.getElementById("app")!);
// The service worker makes the app installable and shows pushes; a failure leaves the app as it is.
void registerWorker()?.catch(() => undefined);
