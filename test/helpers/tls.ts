import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";

/** A self-signed certificate for 127.0.0.1 (openssl), valid a day: a server Node does not trust unless told to (NODE_EXTRA_CA_CERTS). */
export async function selfSignedCert(dir: string): Promise<{ key: Buffer; cert: Buffer; certFile: string }> {
  const [keyFile, certFile] = [join(dir, "key.pem"), join(dir, "cert.pem")];
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
  return { key: await readFile(keyFile), cert: await readFile(certFile), certFile };
}
