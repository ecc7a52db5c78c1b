variable "project_id" {
  description = "Project the service runs in."
  type        = string
}

variable "region" {
  description = "Cloud Run region, e.g. europe-west1."
  type        = string
}

variable "name" {
  description = "Service name."
  type        = string

  validation {
    condition     = can(regex("^[a-z]([a-z0-9-]{0,47}[a-z0-9])?$", var.name))
    error_message = "A Cloud Run service name is 1 to 49 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen."
  }
}

variable "image" {
  description = "The sluice container image (built from the repository's Dockerfile), e.g. europe-west1-docker.pkg.dev/P/sluice/sluice:v1.0.0."
  type        = string

  validation {
    condition     = length(trimspace(var.image)) > 0
    error_message = "Name a container image."
  }
}

variable "service_account_email" {
  description = "The service account the service runs as."
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

variable "min_instances" {
  description = "Minimum instances. 0 scales to zero when no request is open."
  type        = number
  default     = 0

  validation {
    condition     = var.min_instances >= 0 && floor(var.min_instances) == var.min_instances
    error_message = "min_instances is a whole number, 0 or more."
  }
}

variable "max_instances" {
  description = "Maximum instances (bounds the store connections too)."
  type        = number
  default     = 10

  validation {
    condition     = var.max_instances >= 1 && floor(var.max_instances) == var.max_instances
    error_message = "max_instances is a whole number, 1 or more."
  }
}

variable "concurrency" {
  description = "Requests one instance serves at once. High, since a waiting long poll costs almost no CPU."
  type        = number
  default     = 1000

  validation {
    condition     = var.concurrency >= 1 && var.concurrency <= 1000
    error_message = "Cloud Run concurrency is 1 to 1000."
  }
}

variable "timeout_seconds" {
  description = "Request timeout. Must exceed SQS's longest poll, 20 s."
  type        = number
  default     = 300

  validation {
    condition     = var.timeout_seconds > 20 && var.timeout_seconds <= 3600
    error_message = "timeout_seconds must be above 20 (a 20 s long poll must fit) and at most 3600."
  }
}

variable "cpu" {
  description = "CPU limit of an instance."
  type        = string
  default     = "1"
}

variable "memory" {
  description = "Memory limit of an instance."
  type        = string
  default     = "512Mi"
}

variable "cloud_sql_instances" {
  description = "Cloud SQL connection names (PROJECT:REGION:INSTANCE) whose unix sockets are mounted under /cloudsql."
  type        = list(string)
  default     = []
}

variable "public" {
  description = "Let anyone invoke the service (allUsers gets roles/run.invoker). SigV4 with the access keys is what keeps strangers out; Cloud Run IAM would want its own tokens, which SQS clients do not send."
  type        = bool
  default     = true
}

variable "deletion_protection" {
  description = "Refuse to destroy the service."
  type        = bool
  default     = false
}

variable "labels" {
  description = "Labels on the service."
  type        = map(string)
  default     = {}
}
