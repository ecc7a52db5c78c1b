variable "project_id" {
  description = "Project that holds the secrets."
  type        = string
}

variable "secrets" {
  description = "Secret ID => value. Each becomes a Secret Manager secret with one version holding the value (the value is in the Terraform state too, as for any secret Terraform writes)."
  type        = map(string)
  sensitive   = true

  validation {
    condition     = alltrue([for id in keys(var.secrets) : can(regex("^[A-Za-z0-9_-]{1,255}$", id))])
    error_message = "Secret IDs are 1 to 255 letters, digits, - and _."
  }
  validation {
    condition     = alltrue([for v in values(var.secrets) : length(v) > 0])
    error_message = "A secret's value must not be empty."
  }
}

variable "accessor" {
  description = "The one member granted roles/secretmanager.secretAccessor, on each of these secrets only (e.g. serviceAccount:sluice@P.iam.gserviceaccount.com)."
  type        = string

  validation {
    condition     = can(regex("^serviceAccount:", var.accessor))
    error_message = "The accessor is a service account member: serviceAccount:EMAIL."
  }
}

variable "labels" {
  description = "Labels on each secret."
  type        = map(string)
  default     = {}
}
