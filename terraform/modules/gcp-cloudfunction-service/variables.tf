variable "project_id" {
  description = "Project the function runs in."
  type        = string
}

variable "region" {
  description = "Region of the function and its source bucket."
  type        = string
}

variable "name" {
  description = "Function name (and its Cloud Run service's)."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([a-z0-9-]{0,47}[a-z0-9])?$", var.name))
    error_message = "A function name is 1 to 49 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen."
  }
}

variable "source_zip" {
  description = "Path of a zip of the repository's root (what gcloud functions deploy --source . uploads; e.g. git archive --format zip -o sluice-source.zip HEAD). The buildpack builds the root package, function.go."
  type        = string
}

variable "go_version" {
  description = "Go version the buildpack builds with (GOOGLE_GO_VERSION); at least the go directive of go.mod."
  type        = string
  default     = "1.26.8"

  validation {
    condition     = can(regex("^1\\.[0-9]+\\.[0-9]+$", var.go_version))
    error_message = "go_version is a full Go version such as 1.26.8."
  }
}

variable "runtime" {
  description = "Cloud Functions runtime of that Go line."
  type        = string
  default     = "go126"
}

variable "build_service_account" {
  description = "Service account the build runs as (projects/P/serviceAccounts/EMAIL); null for the project's default."
  type        = string
  default     = null
}

variable "service_account_email" {
  description = "The service account the function runs as."
  type        = string
}

variable "env" {
  description = "Plain environment variables (SLUICE_* settings that are not secret)."
  type        = map(string)
  default     = {}

  validation {
    condition     = length(setintersection(keys(var.env), ["SLUICE_ACCESS_KEYS", "SLUICE_MAINTENANCE_TOKEN", "DATABASE_URL"])) == 0
    error_message = "SLUICE_ACCESS_KEYS, SLUICE_MAINTENANCE_TOKEN and DATABASE_URL are secrets: pass them in secret_env."
  }
}

variable "secret_env" {
  description = "Environment variables read from Secret Manager: name => {secret (ID), version}."
  type = map(object({
    secret  = string
    version = string
  }))
  default = {}
}

variable "max_instances" {
  description = "Maximum function instances (bounds the store connections too)."
  type        = number
  default     = 10
}

variable "concurrency" {
  description = "Requests per function instance (long polls share one; above 1 needs a whole CPU)."
  type        = number
  default     = 80

  validation {
    condition     = var.concurrency >= 1 && var.concurrency <= 1000
    error_message = "concurrency is 1 to 1000."
  }
}

variable "memory" {
  description = "Memory of an instance."
  type        = string
  default     = "512Mi"
}

variable "vpc_connector" {
  description = "Serverless VPC Access connector (projects/P/locations/R/connectors/C) for private ranges, e.g. a database's private IP; null for none."
  type        = string
  default     = null
}
