// Keeps a layer library non-empty while its directory has no sources yet.
