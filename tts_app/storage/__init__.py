"""Files the server keeps on disk: uploads, generated files, and what they weigh."""
