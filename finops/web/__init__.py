"""The HTTP request's edges: middleware (display time zone, audit source, unreadable queries), the product's 404 page,
the client address behind trusted proxies, and the size limit of a batch write."""
